//! `deltaflash replay`: a trace against one NoFTL region or a conventional FTL.
//!
//! Formats: our page traces (`native`, [`crate::trace`]) and the block traces of
//! [`workloads::blocktrace`] (MSR Cambridge, blkparse, fio iologs, SPC). The trace is
//! read twice, one line at a time, never held: a first pass checks every line and
//! finds its extent (so a bad line or an address beyond the device stops the run
//! before any I/O), the second replays it.
//!
//! A block request covers the logical pages its bytes touch. A write that covers only
//! part of a page is a read-modify-write: the page is read (if it holds data) and
//! written when the read completes (`partial_page_writes`, `rmw_reads`). A read of a
//! page never written costs nothing (`unmapped_page_reads`). A trim drops only the
//! pages it covers whole. A flush completes when every request before it has.
//!
//! Timing: closed (`--queue-depth` requests in flight, the next issued when one
//! completes; latency from issue) or open (each request issued at its timestamp,
//! measured from the trace's first and divided by `--speed`, or later while
//! `--queue-depth` requests are in flight; latency from the timestamp, so it includes
//! that wait and the device's queueing).

use crate::runner::{RequestKind, Runner};
use crate::trace::{NativeReader, TraceOp};
use crate::{config, fill, report, target, with_progress, CommonArgs};
use clap::{Args, ValueEnum};
use nand::SimTime;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::json;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use workloads::blocktrace::{BlockOp, BlockReader, BlockRequest, Format};

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Page operations: `W lpn`, `R lpn`, `D lpn offset len`, `T lpn`; `#` comments.
    Native,
    /// MSR Cambridge CSV: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime.
    Msr,
    /// blkparse's default text output; Q (queued) events are the requests.
    Blkparse,
    /// fio iolog, version 2 or 3 (`fio version N iolog` first).
    Fio,
    /// SPC/UMass CSV: ASU,LBA,Size,Opcode,Timestamp.
    Spc,
}

impl TraceFormat {
    fn block(self) -> Option<Format> {
        match self {
            TraceFormat::Native => None,
            TraceFormat::Msr => Some(Format::Msr),
            TraceFormat::Blkparse => Some(Format::Blkparse),
            TraceFormat::Fio => Some(Format::Fio),
            TraceFormat::Spc => Some(Format::Spc),
        }
    }
}

/// `--timing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// --queue-depth requests in flight; the next is issued when one completes.
    Closed,
    /// Each request at its timestamp (÷ --speed), waiting while --queue-depth are in flight.
    Open,
}

fn speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 1e9 => Ok(x),
        _ => Err(format!("{} is not a speed-up in (0, 1e9]", workloads::limits::quote(text))),
    }
}

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Trace file (read twice, a line at a time: a regular file, not a pipe).
    #[arg(long)]
    trace: PathBuf,
    /// Trace format (docs/traces.md describes each and how it maps onto flash pages).
    #[arg(long, value_enum, default_value_t = TraceFormat::Native)]
    format: TraceFormat,
    /// closed: --queue-depth requests in flight, the next issued when one completes;
    /// open: each request issued at its timestamp (÷ --speed), later while
    /// --queue-depth are in flight, its latency counted from the timestamp. Native
    /// traces have no timestamps: closed only.
    #[arg(long, value_enum, default_value_t = Timing::Closed)]
    timing: Timing,
    /// --timing open: replay this many times faster (2 halves every gap between
    /// requests) [default: 1].
    #[arg(long, value_parser = speed)]
    speed: Option<f64>,
    /// Map addresses beyond the logical capacity back into it (logical page modulo
    /// the logical pages) instead of refusing the trace.
    #[arg(long)]
    wrap: bool,
    /// Write every logical page once before replaying (reads of pages never written
    /// cost nothing).
    #[arg(long)]
    fill: bool,
}

/// What the first pass learns: the requests, whether there are appends, and the lines
/// of the highest address and the longest request (to refuse before replaying).
#[derive(Default)]
struct Survey {
    requests: u64,
    deltas: bool,
    first_time_ns: Option<u64>,
    /// (line, logical page) of the highest page touched, the first line if tied.
    highest_page: Option<(usize, u64)>,
    /// (line, pages) of the request touching the most pages.
    most_pages: Option<(usize, u64)>,
}

impl Survey {
    fn touch(&mut self, line: usize, first_page: u64, pages: u64) {
        if pages == 0 {
            return;
        }
        let last = first_page + (pages - 1);
        if self.highest_page.is_none_or(|(_, p)| last > p) {
            self.highest_page = Some((line, last));
        }
        if self.most_pages.is_none_or(|(_, n)| pages > n) {
            self.most_pages = Some((line, pages));
        }
    }
}

/// The logical pages a block request touches: (first, count).
fn pages_of(r: &BlockRequest, page_bytes: u64) -> (u64, u64) {
    if r.len_bytes == 0 || matches!(r.op, BlockOp::Flush) {
        return (r.offset_bytes / page_bytes, 0);
    }
    let first = r.offset_bytes / page_bytes;
    // The parsers bound offset and length to u64; their sum may not be.
    let last = (r.offset_bytes as u128 + r.len_bytes as u128 - 1) / page_bytes as u128;
    (first, (last - first as u128 + 1).min(u64::MAX as u128) as u64)
}

/// Block request counts of a replay, beside the runner's metrics.
#[derive(Default)]
struct BlockCounts {
    read_requests: u64,
    write_requests: u64,
    trim_requests: u64,
    flush_requests: u64,
    /// Page writes that covered part of the page (each a read-modify-write).
    partial_page_writes: u64,
    /// Pages read for them (a page never written is not read).
    rmw_reads: u64,
    /// Page reads of pages never written (no flash work).
    unmapped_page_reads: u64,
}

impl BlockCounts {
    fn rows(&self) -> Vec<(&'static str, &'static str, u64)> {
        vec![
            ("read requests", "read_requests", self.read_requests),
            ("write requests", "write_requests", self.write_requests),
            ("trim requests", "trim_requests", self.trim_requests),
            ("flush requests", "flush_requests", self.flush_requests),
            ("partial-page writes (read-modify-write)", "partial_page_writes", self.partial_page_writes),
            ("read-modify-write page reads", "rmw_reads", self.rmw_reads),
            ("reads of pages never written", "unmapped_page_reads", self.unmapped_page_reads),
        ]
    }
}

fn open(path: &std::path::Path) -> Result<BufReader<File>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file (the trace is read twice)", path.display()));
    }
    Ok(BufReader::with_capacity(1 << 16, file))
}

pub fn run(args: ReplayArgs) -> Result<(), String> {
    let json = args.common.run.json_file()?;
    let source = args.trace.display().to_string();
    if args.timing == Timing::Closed && args.speed.is_some() {
        return Err("--speed scales the timestamps of --timing open; closed timing has none to scale".into());
    }
    if args.timing == Timing::Open && args.format == TraceFormat::Native {
        return Err("--timing open issues requests at their timestamps, and native traces have none: \
                    use --timing closed (the default) or a timestamped format"
            .into());
    }
    if args.wrap && args.format == TraceFormat::Native {
        return Err("--wrap maps block addresses into the device; a native trace names logical pages: \
                    give lpns below the device's logical pages"
            .into());
    }
    let page_bytes = args.common.device.geometry()?.page_bytes as u64;
    let survey = survey(&args, &source, page_bytes)?;
    let target = target(&args.common, survey.deltas)?;
    // Replayed pages are a stamp and erased bytes, so appends may go anywhere after it.
    let mut runner = Runner::new(target, args.common.run.queue_depth, page_bytes as usize - 16);
    let logical = runner.logical_pages();
    check_extent(&args, &source, &survey, logical, page_bytes)?;
    if args.fill {
        fill(&mut runner)?;
    }
    let start = runner.start_measurement();
    let mut counts = BlockCounts::default();
    match args.format.block() {
        None => replay_native(&args, &source, &survey, &mut runner)?,
        Some(format) => replay_block(&args, format, &source, &survey, &mut runner, &mut counts)?,
    }
    let measured = runner.measure(&start);
    let config = config(
        &args.common,
        &runner,
        json!({
            "trace": source,
            "format": args.format,
            "timing": args.timing,
            "speed": args.speed.unwrap_or(1.0),
            "wrap": args.wrap,
            "trace_operations": survey.requests,
            "fill": args.fill,
        }),
    );
    let extra = if args.format == TraceFormat::Native { Vec::new() } else { counts.rows() };
    report("replay", config, logical, 0, &measured, &extra, json.as_ref())?;
    runner.finish().map_err(|e| e.to_string())
}

/// The first pass: every line checked, the extent found.
fn survey(args: &ReplayArgs, source: &str, page_bytes: u64) -> Result<Survey, String> {
    let mut s = Survey::default();
    let input = open(&args.trace)?;
    match args.format.block() {
        None => {
            for item in NativeReader::new(input, source) {
                let (line, op) = item?;
                if let TraceOp::Delta { offset, len, .. } = op {
                    if offset as u64 + len as u64 > page_bytes {
                        return Err(format!(
                            "{source}:{line}: a delta of {len} bytes at offset {offset} runs past the end of the {page_bytes}-byte page"
                        ));
                    }
                    s.deltas = true;
                }
                s.requests += 1;
                s.touch(line, u64::from(op.lpn()), 1);
            }
        }
        Some(format) => {
            for item in BlockReader::new(input, source, format) {
                let (line, r) = item?;
                s.requests += 1;
                s.first_time_ns.get_or_insert(r.time_ns);
                let (first, pages) = pages_of(&r, page_bytes);
                s.touch(line, first, pages);
            }
        }
    }
    Ok(s)
}

/// Refuses a trace that reaches past the logical capacity (unless `--wrap`), or has a
/// request longer than the whole device.
fn check_extent(args: &ReplayArgs, source: &str, s: &Survey, logical: u32, page_bytes: u64) -> Result<(), String> {
    let capacity = u64::from(logical) * page_bytes;
    let native = args.format == TraceFormat::Native;
    if let Some((line, pages)) = s.most_pages.filter(|&(_, n)| n > u64::from(logical)) {
        return Err(format!(
            "{source}:{line}: a request of {pages} pages is longer than the device's {logical} logical pages ({capacity} bytes)"
        ));
    }
    match s.highest_page {
        Some((line, page)) if page >= u64::from(logical) && native => {
            Err(format!("{source}:{line}: lpn {page} is beyond the device's {logical} logical pages"))
        }
        Some((line, page)) if page >= u64::from(logical) && !args.wrap => Err(format!(
            "{source}:{line}: logical page {page} is beyond the device's {logical} logical pages of {page_bytes} bytes \
             ({capacity} bytes; the trace's highest address); --wrap maps addresses beyond it back into it"
        )),
        _ => Ok(()),
    }
}

fn replay_native(args: &ReplayArgs, source: &str, s: &Survey, runner: &mut Runner) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.common.run.seed);
    let mut ops = NativeReader::new(open(&args.trace)?, source);
    with_progress(s.requests, "replay", || {
        let (line, op) = next_or_changed(ops.next(), source)?;
        let result = match op {
            TraceOp::Write { lpn } => runner.write(lpn),
            TraceOp::Read { lpn } => runner.read(lpn),
            TraceOp::Trim { lpn } => runner.trim(lpn),
            TraceOp::Delta { lpn, offset, len } => {
                let bytes: Vec<u8> = (0..len).map(|_| rng.gen::<u8>() & 0x7F).collect();
                runner.append_at_offset(lpn, offset, &bytes)
            }
        };
        result.map_err(|e| format!("{source}:{line}: {e}"))
    })
}

/// The next item of the second pass; the file changing between the passes is an error.
fn next_or_changed<T>(item: Option<Result<(usize, T), String>>, source: &str) -> Result<(usize, T), String> {
    item.unwrap_or_else(|| Err(format!("{source}: the trace became shorter while it was replayed")))
}

fn replay_block(
    args: &ReplayArgs,
    format: Format,
    source: &str,
    s: &Survey,
    runner: &mut Runner,
    counts: &mut BlockCounts,
) -> Result<(), String> {
    let page_bytes = runner.page_bytes() as u64;
    let logical = u64::from(runner.logical_pages());
    let base_ns = runner.sim_now();
    let first_ns = s.first_time_ns.unwrap_or(0);
    let speed = args.speed.unwrap_or(1.0);
    let arrival = |t: u64| -> SimTime { base_ns + ((t.saturating_sub(first_ns)) as f64 / speed).round() as u64 };
    let mut requests = BlockReader::new(open(&args.trace)?, source, format);
    with_progress(s.requests, "replay", || {
        let (line, r) = next_or_changed(requests.next(), source)?;
        let at = (args.timing == Timing::Open).then(|| arrival(r.time_ns));
        let lpn = |page: u64| (if args.wrap { page % logical } else { page }) as u32;
        one_request(runner, &r, at, page_bytes, lpn, counts).map_err(|e| format!("{source}:{line}: {e}"))
    })
}

/// Replays one block request arriving at `arrival` (`None`: closed timing).
fn one_request(
    runner: &mut Runner,
    r: &BlockRequest,
    arrival: Option<SimTime>,
    page_bytes: u64,
    lpn: impl Fn(u64) -> u32,
    counts: &mut BlockCounts,
) -> Result<(), flash::Error> {
    let issue = runner.begin(arrival);
    let from = arrival.unwrap_or(issue);
    let (first, count) = pages_of(r, page_bytes);
    let pages = first..first + count;
    let end_of = |end: Option<SimTime>, e: SimTime| Some(end.map_or(e, |x: SimTime| x.max(e)));
    let covers = |page: u64| {
        let (start, size) = (u128::from(page) * u128::from(page_bytes), u128::from(page_bytes));
        u128::from(r.offset_bytes) <= start && start + size <= u128::from(r.offset_bytes) + u128::from(r.len_bytes)
    };
    let mut end = None;
    match r.op {
        BlockOp::Read => {
            counts.read_requests += 1;
            for page in pages {
                match runner.read_page_at(lpn(page), issue)? {
                    Some(e) => end = end_of(end, e),
                    None => counts.unmapped_page_reads += 1,
                }
            }
            runner.end_request(Some(RequestKind::Read), from, end);
        }
        BlockOp::Write => {
            counts.write_requests += 1;
            for page in pages {
                let mut at = issue;
                if !covers(page) {
                    counts.partial_page_writes += 1;
                    if let Some(read_end) = runner.read_page_at(lpn(page), issue)? {
                        counts.rmw_reads += 1;
                        at = read_end;
                    }
                }
                end = end_of(end, runner.write_page_at(lpn(page), at)?);
            }
            runner.end_request(Some(RequestKind::Write), from, end);
        }
        BlockOp::Trim => {
            counts.trim_requests += 1;
            for page in pages.filter(|&p| covers(p)) {
                if let Some(e) = runner.trim_page_at(lpn(page), issue)? {
                    end = end_of(end, e);
                }
            }
            runner.end_request(None, from, end);
        }
        BlockOp::Flush => {
            counts.flush_requests += 1;
            let done = runner.flush_done_at(issue);
            runner.end_request(None, from, Some(done));
        }
    }
    Ok(())
}
