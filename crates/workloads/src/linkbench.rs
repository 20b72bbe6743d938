//! LinkBench (Armstrong et al., SIGMOD 2013; the IPA paper's appendix A): Facebook's
//! social-graph benchmark. Three tables as in LinkBench's MySQL schema: `nodetable`
//! (objects with a payload), `linktable` (typed, directed edges id1 → id2 with a
//! visibility flag and a payload; the `link_id1_type` index serves the link lists) and
//! `counttable` (visible links per (id1, link_type)). Each transaction is one of the
//! eleven operations, drawn with the shares of LinkBench's default `FBWorkload`
//! configuration ([`MIX`]); `get_link` fetches one id2, `multiget_link` two to 128, their
//! split a geometric law with p = 0.382 (mean 2.6), as LinkBench's `link_multiget_dist`.
//!
//! Distributions, LinkBench's defaults scaled to `nodes`:
//! - ids of accesses: Zipf over the loaded nodes (Gray et al.'s generator, as LinkBench's
//!   `ZipfDistribution`) with shape 0.8 for link reads, 0.741 for link writes, 0.625 for
//!   node reads and 0.606 for node updates; node deletes uniform. The ranks are scattered
//!   over the ids by a fixed permutation, so hot nodes are not neighbours;
//! - out-degree at load: 45.3% of the nodes have no link, the rest P(K ≥ k) = k^-1.25 (at
//!   most 10,000), which matches LinkBench's empirical `nlinks` table at 1 link (77.5%)
//!   and 100 links (99.83%); mean 2.3 links per node. It is a function of the node id
//!   (a seeded hash), so operations find it again to pick id2 as LinkBench's
//!   `ID2Chooser` does: id1 + a draw in ⌈degree / p_exist⌉ (p_exist 0.05 for add, 0.9
//!   for update and delete, 0.5 for get), wrapped into the loaded ids; degree split
//!   evenly over the two link types;
//! - payloads: log-normal sizes with σ = 1 and median 128 bytes for nodes (at most
//!   [`MAX_NODE_DATA`]; LinkBench allows 1 MiB) and 8 bytes for links (below 255).
//!
//! Semantics follow LinkBench's MySQL store: adding an existing link rewrites its
//! payload, time and version (and makes it visible); deleting a link hides it
//! (visibility 0); the count row changes only when a link's visibility does. Where this
//! workload is stricter: a link is only added from a node that exists, and deleting a node
//! deletes its outgoing links and count rows, so no link outlives its source (LinkBench
//! keeps no such rule). Link id2s may name deleted nodes, as in LinkBench, which keeps no
//! inverse links. Not modelled: LinkBench's "historical" link-list queries (0.3% of
//! link lists page through an older list), served as ordinary link lists.
//!
//! Invariants ([`Linkbench::check`]): each count row equals the visible links of its
//! (id1, link_type), each (id1, link_type) with visible links has a count row, every link's
//! id1 is a live node, every visibility is 0 or 1.
//!
//! Times are the engine's simulated clock (milliseconds for links and counts, seconds
//! for nodes, from a fixed epoch), so a seed gives the same database.

use crate::limits::CountRange;
use crate::params::WorkloadParams;
use crate::workload::{FirstProblem, TxOutcome, TxResult, Workload, WorkloadError};
use crate::{err as e, int};
use engine::db::{TableId, Transaction};
use engine::types::Value;
use engine::Database;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Nodes loaded (at least 2, so a Zipf draw has two ranks; below the scatter prime).
pub const NODES: CountRange = CountRange { min: 2, max: 1_000_000_000 };

/// LinkBench's parameters in an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkbenchParams {
    pub nodes: u32,
    /// Share of node and link updates that keep the payload and change only numeric
    /// fields (time, version, visibility). 0, LinkBench's own: every update writes a
    /// new payload. The IPA paper's MySQL traces had "over a third" (appendix A.0.3).
    pub keep_payload_share: f64,
}

impl Default for LinkbenchParams {
    fn default() -> Self {
        LinkbenchParams { nodes: 100_000, keep_payload_share: 0.0 }
    }
}

impl WorkloadParams for LinkbenchParams {
    const NAME: &'static str = "linkbench";
    const ABOUT: &'static str = "LinkBench: Facebook's social graph, nodes, links and counts, 69% reads";

    fn check(&self) -> Result<(), (&'static str, String)> {
        NODES.check(self.nodes.into()).map(|_| ()).map_err(|p| ("nodes", p))?;
        if !(0.0..=1.0).contains(&self.keep_payload_share) {
            return Err((
                "keep_payload_share",
                format!("must be a share from 0 to 1, not {}", self.keep_payload_share),
            ));
        }
        Ok(())
    }

    fn size(&self) -> String {
        format!("{} nodes", self.nodes)
    }

    fn build(&self, rng: &mut ChaCha8Rng) -> Box<dyn Workload> {
        let mut workload = Linkbench::new(self.nodes.into(), rng.gen());
        workload.keep_payload_share = self.keep_payload_share;
        Box::new(workload)
    }
}

/// The eleven operations, declared in [`Op::ALL`] order (`op as usize` indexes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    GetNode,
    AddNode,
    UpdateNode,
    DeleteNode,
    GetLink,
    MultigetLink,
    GetLinkList,
    CountLink,
    AddLink,
    DeleteLink,
    UpdateLink,
}

impl Op {
    pub const ALL: [Op; 11] = [
        Op::GetNode,
        Op::AddNode,
        Op::UpdateNode,
        Op::DeleteNode,
        Op::GetLink,
        Op::MultigetLink,
        Op::GetLinkList,
        Op::CountLink,
        Op::AddLink,
        Op::DeleteLink,
        Op::UpdateLink,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::GetNode => "get_node",
            Op::AddNode => "add_node",
            Op::UpdateNode => "update_node",
            Op::DeleteNode => "delete_node",
            Op::GetLink => "get_link",
            Op::MultigetLink => "multiget_link",
            Op::GetLinkList => "get_link_list",
            Op::CountLink => "count_link",
            Op::AddLink => "add_link",
            Op::DeleteLink => "delete_link",
            Op::UpdateLink => "update_link",
        }
    }
}

/// The operation mix of LinkBench's `FBWorkload.properties`, in percent (sums to 100).
/// `GetLink` stands for LinkBench's `getlink`, which fetches one id2 (`get_link`) or
/// several (`multiget_link`), see [`MULTIGET_P`].
pub const MIX: [(Op, f64); 10] = [
    (Op::AddLink, 8.988_660_1),
    (Op::DeleteLink, 2.990_766_4),
    (Op::UpdateLink, 8.012_212_5),
    (Op::CountLink, 4.886_356_7),
    (Op::GetLink, 0.526_114_2),
    (Op::GetLinkList, 50.711_914_5),
    (Op::AddNode, 2.573_278_9),
    (Op::UpdateNode, 7.366_437),
    (Op::DeleteNode, 1.011_591_4),
    (Op::GetNode, 12.932_668_3),
];

/// Geometric law of the id2s per link fetch: P(k) = p (1 − p)^(k−1), k in 1..=128.
pub const MULTIGET_P: f64 = 0.382;
const MULTIGET_MAX: u64 = 128;

/// Zipf shapes of LinkBench's defaults.
const LINK_READ_SHAPE: f64 = 0.8;
const LINK_WRITE_SHAPE: f64 = 0.741;
const NODE_READ_SHAPE: f64 = 0.625;
const NODE_UPDATE_SHAPE: f64 = 0.606;

/// Out-degree: share of nodes without links, and the power-law exponent of the rest.
const NO_LINKS: f64 = 0.4533;
const DEGREE_EXPONENT: f64 = 1.25;
const MAX_DEGREE: u64 = 10_000;

/// Link types (LinkBench's `link_type_count`), numbered from LinkBench's default type.
const LINK_TYPES: i64 = 2;
const FIRST_LINK_TYPE: i64 = 123_456_789;
const NODE_TYPE: i64 = 2048;

/// Probability that an operation's id2 names a loaded link (LinkBench's `ID2Chooser`).
const P_ADD_EXIST: f64 = 0.05;
const P_UPDATE_EXIST: f64 = 0.9;
const P_DELETE_EXIST: f64 = 0.9;
const P_GET_EXIST: f64 = 0.5;

/// Payload sizes: log-normal with this median and σ = 1, below the maximum.
const NODE_DATA_MEDIAN: f64 = 128.0;
const LINK_DATA_MEDIAN: f64 = 8.0;
const DATA_SIGMA: f64 = 1.0;
/// Longest node payload (a row must fit a DB page; LinkBench's is 1 MiB, which its
/// log-normal reaches with probability 2%).
pub const MAX_NODE_DATA: usize = 1024;
const MAX_LINK_DATA: usize = 255;

/// Link lists return at most this many links (LinkBench's `DEFAULT_LIMIT`).
const LINK_LIST_LIMIT: usize = 10_000;

const VISIBLE: i64 = 1;
const HIDDEN: i64 = 0;

/// Epoch of the simulated clock: 2023-11-14, in milliseconds.
const EPOCH_MS: i64 = 1_700_000_000_000;
/// Loaded links are up to 30 days old.
const LOAD_AGE_MS: i64 = 30 * 86_400_000;

/// A prime above [`NODES`]' maximum: rank × it mod n is a permutation of 0..n.
const SCATTER: u128 = 2_654_435_761;

/// Σ_{k=1..n} k^-s: the first terms summed, the rest by Euler–Maclaurin.
fn harmonic(n: u64, s: f64) -> f64 {
    const EXACT: u64 = 1000;
    let head: f64 = (1..=n.min(EXACT)).map(|k| (k as f64).powf(-s)).sum();
    if n <= EXACT {
        return head;
    }
    let (m, n) = (EXACT as f64, n as f64);
    let integral = (n.powf(1.0 - s) - m.powf(1.0 - s)) / (1.0 - s);
    head + integral + (n.powf(-s) - m.powf(-s)) / 2.0 + s / 12.0 * (m.powf(-s - 1.0) - n.powf(-s - 1.0))
}

/// Zipf ranks over 0..n with shape θ < 1 (Gray et al. 1994, "Quickly generating
/// billion-record synthetic databases"): rank 0 the likeliest.
#[derive(Clone, Debug)]
struct Zipf {
    n: u64,
    zetan: f64,
    eta: f64,
    alpha: f64,
    half_pow_theta: f64,
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Zipf {
        let zetan = harmonic(n, theta);
        let zeta2 = harmonic(2, theta);
        // With two ranks both are decided before `eta` is used.
        let eta = if n > 2 { (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan) } else { 0.0 };
        Zipf { n, zetan, eta, alpha: 1.0 / (1.0 - theta), half_pow_theta: 0.5f64.powf(theta) }
    }

    fn rank(&self, rng: &mut ChaCha8Rng) -> u64 {
        let p: f64 = rng.gen();
        let uz = p * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        ((self.n as f64 * (self.eta * p - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }
}

/// SplitMix64's finaliser: a well-mixed hash of one word.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A log-normal size with this median and σ = [`DATA_SIGMA`], in 0..max.
fn payload_bytes(rng: &mut ChaCha8Rng, median: f64, max: usize) -> usize {
    // Box–Muller: one standard normal draw.
    let (u1, u2): (f64, f64) = (1.0 - rng.gen::<f64>(), rng.gen());
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    ((z * DATA_SIGMA + median.ln()).exp().round() as usize).min(max - 1)
}

fn payload(rng: &mut ChaCha8Rng, median: f64, max: usize) -> Value {
    let n = payload_bytes(rng, median, max);
    Value::Text((0..n).map(|_| (b'a' + rng.gen_range(0..26u8)) as char).collect())
}

const NODE: usize = 0;
const LINK: usize = 1;
const COUNT: usize = 2;

/// Link columns.
const L_VISIBILITY: usize = 3;
const L_DATA: usize = 4;
const L_TIME: usize = 5;
const L_VERSION: usize = 6;

pub struct Linkbench {
    /// Nodes loaded: accesses draw from ids 1..=nodes.
    pub nodes: i64,
    /// Seeds the out-degree hash.
    salt: u64,
    link_reads: Zipf,
    link_writes: Zipf,
    node_reads: Zipf,
    node_updates: Zipf,
    /// [`LinkbenchParams::keep_payload_share`].
    pub keep_payload_share: f64,
    tables: Option<[TableId; 3]>,
    /// The id the next added node gets.
    next_node: i64,
    /// Operations run, by [`Op`] in [`Op::ALL`] order.
    counts: [u64; 11],
}

impl Linkbench {
    pub fn new(nodes: i64, salt: u64) -> Linkbench {
        let nodes = nodes.max(NODES.min as i64);
        let n = nodes as u64;
        Linkbench {
            nodes,
            salt,
            link_reads: Zipf::new(n, LINK_READ_SHAPE),
            link_writes: Zipf::new(n, LINK_WRITE_SHAPE),
            node_reads: Zipf::new(n, NODE_READ_SHAPE),
            node_updates: Zipf::new(n, NODE_UPDATE_SHAPE),
            keep_payload_share: 0.0,
            tables: None,
            next_node: nodes + 1,
            counts: [0; 11],
        }
    }

    /// Whether an update keeps the payload ([`LinkbenchParams::keep_payload_share`]);
    /// draws nothing at share 0, so LinkBench's own updates run as they always did.
    fn keeps_payload(&self, rng: &mut ChaCha8Rng) -> bool {
        self.keep_payload_share > 0.0 && rng.gen_bool(self.keep_payload_share)
    }

    /// Operations run so far, by kind.
    pub fn op_counts(&self) -> impl Iterator<Item = (Op, u64)> + '_ {
        Op::ALL.into_iter().zip(self.counts)
    }

    /// The table ids; on first use without a load, also where node ids go on.
    fn ids(&mut self, db: &mut Database) -> Result<[TableId; 3], WorkloadError> {
        if let Some(t) = self.tables {
            return Ok(t);
        }
        let id = |n: &str| db.table_id(n).map_err(e);
        let t = [id("nodetable")?, id("linktable")?, id("counttable")?];
        let tx = db.begin();
        let added = db.scan(&tx, t[NODE], &[Value::Int(self.nodes + 1)], &[Value::Int(i64::MAX)]).map_err(e)?;
        db.commit(tx).map_err(e)?;
        self.next_node = added.iter().map(|r| int(&r[0]) + 1).max().unwrap_or(self.nodes + 1);
        self.tables = Some(t);
        Ok(t)
    }

    /// A loaded node id for a Zipf rank: ranks scattered over 1..=nodes.
    fn scatter(&self, rank: u64) -> i64 {
        (rank as u128 * SCATTER % self.nodes as u128) as i64 + 1
    }

    /// Links of `id1` at load, all types.
    fn degree(&self, id1: i64) -> u64 {
        let u = (mix(self.salt ^ id1 as u64) >> 11) as f64 / (1u64 << 53) as f64;
        if u < NO_LINKS {
            return 0;
        }
        let tail = 1.0 - (u - NO_LINKS) / (1.0 - NO_LINKS);
        (tail.powf(-1.0 / DEGREE_EXPONENT) as u64).clamp(1, MAX_DEGREE.min(self.nodes as u64))
    }

    /// Links of `id1` of type number `ty` (0-based) at load: the degree split evenly.
    fn degree_of_type(&self, id1: i64, ty: i64) -> u64 {
        let d = self.degree(id1);
        d / LINK_TYPES as u64 + u64::from((ty as u64) < d % LINK_TYPES as u64)
    }

    /// The id2 `offset` places after `id1`, wrapped into the loaded ids.
    fn id2_at(&self, id1: i64, offset: u64) -> i64 {
        ((id1 - 1) as u64 + offset).rem_euclid(self.nodes as u64) as i64 + 1
    }

    /// How many id2s after id1 an operation draws from, so that about `p_exist` of them
    /// were loaded.
    fn id2_range(&self, id1: i64, ty: i64, p_exist: f64) -> u64 {
        ((self.degree_of_type(id1, ty) as f64 / p_exist).ceil() as u64).max(1)
    }

    fn now_ms(db: &Database) -> i64 {
        EPOCH_MS + (db.now() / 1_000_000) as i64
    }

    fn link_type(rng: &mut ChaCha8Rng) -> i64 {
        rng.gen_range(0..LINK_TYPES)
    }

    /// Adds `delta` (±1) to the visible links of (id1, type), creating the row at need.
    fn count_add(
        &self,
        db: &mut Database,
        tx: &Transaction,
        t: TableId,
        id1: i64,
        ty: i64,
        delta: i64,
    ) -> Result<(), WorkloadError> {
        let now = Value::Int(Self::now_ms(db));
        let key = [Value::Int(id1), Value::Int(FIRST_LINK_TYPE + ty)];
        let changed = db
            .update_with(tx, t, &key, |row| {
                Ok(vec![
                    (2, Value::Int((int(&row[2]) + delta).max(0))),
                    (3, now.clone()),
                    (4, Value::Int(int(&row[4]) + 1)),
                ])
            })
            .map_err(e)?;
        if changed.is_none() {
            db.insert(tx, t, &[key[0].clone(), key[1].clone(), Value::Int(delta.max(0)), now, Value::Int(0)])
                .map_err(e)?;
        }
        Ok(())
    }

    /// add_link and update_link (LinkBench's `addLink`): insert, or rewrite the payload
    /// (unless [`Linkbench::keeps_payload`]), time and version of the existing link and
    /// make it visible.
    fn put_link(
        &self,
        db: &mut Database,
        tx: &Transaction,
        t: [TableId; 3],
        rng: &mut ChaCha8Rng,
        p_exist: f64,
    ) -> Result<u32, WorkloadError> {
        let id1 = self.scatter(self.link_writes.rank(rng));
        let ty = Self::link_type(rng);
        let id2 = self.id2_at(id1, rng.gen_range(0..self.id2_range(id1, ty, p_exist)));
        let data = payload(rng, LINK_DATA_MEDIAN, MAX_LINK_DATA);
        if db.get_columns(tx, t[NODE], &[Value::Int(id1)], &[0]).map_err(e)?.is_none() {
            return Ok(1);
        }
        let key = [Value::Int(id1), Value::Int(FIRST_LINK_TYPE + ty), Value::Int(id2)];
        let now = Value::Int(Self::now_ms(db));
        let visibility = db.get_columns(tx, t[LINK], &key, &[L_VISIBILITY]).map_err(e)?.map(|r| int(&r[0]));
        match visibility {
            None => {
                let row =
                    [key[0].clone(), key[1].clone(), key[2].clone(), Value::Int(VISIBLE), data, now, Value::Int(0)];
                db.insert(tx, t[LINK], &row).map_err(e)?;
            }
            Some(v) => {
                let mut sets = vec![(L_VISIBILITY, Value::Int(VISIBLE)), (L_TIME, now), (L_VERSION, Value::Int(0))];
                if !self.keeps_payload(rng) {
                    sets.insert(1, (L_DATA, data));
                }
                db.update(tx, t[LINK], &key, &sets).map_err(e)?;
                if v == VISIBLE {
                    return Ok(3);
                }
            }
        }
        self.count_add(db, tx, t[COUNT], id1, ty, 1)?;
        Ok(4)
    }

    /// delete_link: hides a visible link and counts it out.
    fn delete_link(
        &self,
        db: &mut Database,
        tx: &Transaction,
        t: [TableId; 3],
        rng: &mut ChaCha8Rng,
    ) -> Result<u32, WorkloadError> {
        let id1 = self.scatter(self.link_writes.rank(rng));
        let ty = Self::link_type(rng);
        let id2 = self.id2_at(id1, rng.gen_range(0..self.id2_range(id1, ty, P_DELETE_EXIST)));
        let key = [Value::Int(id1), Value::Int(FIRST_LINK_TYPE + ty), Value::Int(id2)];
        let visibility = db.get_columns(tx, t[LINK], &key, &[L_VISIBILITY]).map_err(e)?.map(|r| int(&r[0]));
        if visibility != Some(VISIBLE) {
            return Ok(1);
        }
        db.update(tx, t[LINK], &key, &[(L_VISIBILITY, Value::Int(HIDDEN))]).map_err(e)?;
        self.count_add(db, tx, t[COUNT], id1, ty, -1)?;
        Ok(3)
    }

    /// get_link and multiget_link: `n` distinct id2s of one (id1, type).
    fn get_links(
        &self,
        db: &mut Database,
        tx: &Transaction,
        t: [TableId; 3],
        rng: &mut ChaCha8Rng,
        n: u64,
    ) -> Result<u32, WorkloadError> {
        let id1 = self.scatter(self.link_reads.rank(rng));
        let ty = Self::link_type(rng);
        let range = self.id2_range(id1, ty, P_GET_EXIST);
        let offsets: Vec<u64> = if range <= n {
            (0..n).collect()
        } else {
            let mut chosen = HashSet::new();
            while (chosen.len() as u64) < n {
                chosen.insert(rng.gen_range(0..range));
            }
            let mut v: Vec<u64> = chosen.into_iter().collect();
            v.sort_unstable();
            v
        };
        for &o in &offsets {
            let key = [Value::Int(id1), Value::Int(FIRST_LINK_TYPE + ty), Value::Int(self.id2_at(id1, o))];
            std::hint::black_box(db.get(tx, t[LINK], &key).map_err(e)?);
        }
        Ok(offsets.len() as u32)
    }

    /// get_link_list: the visible links of (id1, type), newest first, at most 10,000.
    fn get_link_list(
        &self,
        db: &mut Database,
        tx: &Transaction,
        t: [TableId; 3],
        rng: &mut ChaCha8Rng,
    ) -> Result<u32, WorkloadError> {
        let id1 = self.scatter(self.link_reads.rank(rng));
        let ty = Self::link_type(rng);
        let key = [Value::Int(id1), Value::Int(FIRST_LINK_TYPE + ty), Value::Int(VISIBLE)];
        let mut links = db.scan_index(tx, t[LINK], "link_id1_type", &key, &key, usize::MAX).map_err(e)?;
        links.reverse();
        links.truncate(LINK_LIST_LIMIT);
        Ok(1 + links.len() as u32)
    }

    /// delete_node: the node, its outgoing links and its count rows.
    fn delete_node(
        &self,
        db: &mut Database,
        tx: &Transaction,
        t: [TableId; 3],
        rng: &mut ChaCha8Rng,
    ) -> Result<u32, WorkloadError> {
        let id = Value::Int(rng.gen_range(1..=self.nodes));
        if !db.delete(tx, t[NODE], std::slice::from_ref(&id)).map_err(e)? {
            return Ok(1);
        }
        let mut ops = 1;
        for ty in 0..LINK_TYPES {
            let prefix = [id.clone(), Value::Int(FIRST_LINK_TYPE + ty)];
            for link in db.scan(tx, t[LINK], &prefix, &prefix).map_err(e)? {
                db.delete(tx, t[LINK], &link[..3]).map_err(e)?;
                ops += 1;
            }
            ops += u32::from(db.delete(tx, t[COUNT], &prefix).map_err(e)?);
        }
        Ok(ops)
    }

    /// Runs `op`; returns the operation it was (a link fetch of several id2s is a
    /// multiget) and its record operations.
    fn run(
        &mut self,
        op: Op,
        db: &mut Database,
        tx: &Transaction,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Op, u32), WorkloadError> {
        let t = self.ids(db)?;
        let ops = match op {
            Op::GetNode => {
                let id = self.scatter(self.node_reads.rank(rng));
                std::hint::black_box(db.get(tx, t[NODE], &[Value::Int(id)]).map_err(e)?);
                Ok(1)
            }
            Op::AddNode => {
                let id = self.next_node;
                self.next_node += 1;
                let row = [
                    Value::Int(id),
                    Value::Int(NODE_TYPE),
                    Value::Int(1),
                    Value::Int(Self::now_ms(db) / 1000),
                    payload(rng, NODE_DATA_MEDIAN, MAX_NODE_DATA),
                ];
                db.insert(tx, t[NODE], &row).map_err(e)?;
                Ok(1)
            }
            Op::UpdateNode => {
                // LinkBench's update sets version 2, a new time and a new payload.
                let id = self.scatter(self.node_updates.rank(rng));
                let mut sets = vec![(2, Value::Int(2)), (3, Value::Int(Self::now_ms(db) / 1000))];
                if !self.keeps_payload(rng) {
                    sets.push((4, payload(rng, NODE_DATA_MEDIAN, MAX_NODE_DATA)));
                }
                db.update(tx, t[NODE], &[Value::Int(id)], &sets).map_err(e)?;
                Ok(1)
            }
            Op::DeleteNode => self.delete_node(db, tx, t, rng),
            Op::GetLink | Op::MultigetLink => {
                let n = multiget_size(rng);
                let ops = self.get_links(db, tx, t, rng, n)?;
                return Ok((if n == 1 { Op::GetLink } else { Op::MultigetLink }, ops));
            }
            Op::GetLinkList => self.get_link_list(db, tx, t, rng),
            Op::CountLink => {
                let id1 = self.scatter(self.link_reads.rank(rng));
                let key = [Value::Int(id1), Value::Int(FIRST_LINK_TYPE + Self::link_type(rng))];
                std::hint::black_box(db.get_columns(tx, t[COUNT], &key, &[2]).map_err(e)?);
                Ok(1)
            }
            Op::AddLink => self.put_link(db, tx, t, rng, P_ADD_EXIST),
            Op::UpdateLink => self.put_link(db, tx, t, rng, P_UPDATE_EXIST),
            Op::DeleteLink => self.delete_link(db, tx, t, rng),
        }?;
        Ok((op, ops))
    }
}

/// id2s per link fetch: geometric from 1, at most 128.
fn multiget_size(rng: &mut ChaCha8Rng) -> u64 {
    let u = 1.0 - rng.gen::<f64>();
    ((u.ln() / (1.0 - MULTIGET_P).ln()).floor() as u64 + 1).min(MULTIGET_MAX)
}

impl Workload for Linkbench {
    fn name(&self) -> &'static str {
        "linkbench"
    }

    fn tables(&self) -> Vec<&'static str> {
        vec!["nodetable", "linktable", "counttable"]
    }

    fn load(
        &mut self,
        db: &mut Database,
        placement: &dyn Fn(&str) -> String,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), WorkloadError> {
        db.execute(&format!(
            "CREATE TABLE nodetable (id BIGINT PRIMARY KEY, type INT NOT NULL, version BIGINT NOT NULL, time INT NOT NULL, data VARCHAR({MAX_NODE_DATA}) NOT NULL) TABLESPACE {n};
             CREATE TABLE linktable (id1 BIGINT, link_type BIGINT, id2 BIGINT, visibility INT NOT NULL, data VARCHAR({MAX_LINK_DATA}) NOT NULL, time BIGINT NOT NULL, version INT NOT NULL, PRIMARY KEY (id1, link_type, id2)) TABLESPACE {l};
             CREATE INDEX link_id1_type ON linktable (id1, link_type, visibility, time) TABLESPACE {l};
             CREATE TABLE counttable (id BIGINT, link_type BIGINT, count INT NOT NULL, time BIGINT NOT NULL, version BIGINT NOT NULL, PRIMARY KEY (id, link_type)) TABLESPACE {c};",
            n = placement("nodetable"),
            l = placement("linktable"),
            c = placement("counttable"),
        ))
        .map_err(e)?;
        self.tables = None;
        let t = self.ids(db)?;
        let start_ms = Self::now_ms(db);
        let mut tx = db.begin();
        let mut rows = 0u64;
        for id1 in 1..=self.nodes {
            let node = [
                Value::Int(id1),
                Value::Int(NODE_TYPE),
                Value::Int(1),
                Value::Int(start_ms / 1000),
                payload(rng, NODE_DATA_MEDIAN, MAX_NODE_DATA),
            ];
            db.insert(&tx, t[NODE], &node).map_err(e)?;
            rows += 1;
            let mut offset = 0;
            for ty in 0..LINK_TYPES {
                let n = self.degree_of_type(id1, ty);
                if n == 0 {
                    continue;
                }
                let mut newest = 0;
                for _ in 0..n {
                    let time = start_ms - rng.gen_range(0..LOAD_AGE_MS);
                    newest = newest.max(time);
                    let link = [
                        Value::Int(id1),
                        Value::Int(FIRST_LINK_TYPE + ty),
                        Value::Int(self.id2_at(id1, offset)),
                        Value::Int(VISIBLE),
                        payload(rng, LINK_DATA_MEDIAN, MAX_LINK_DATA),
                        Value::Int(time),
                        Value::Int(0),
                    ];
                    db.insert(&tx, t[LINK], &link).map_err(e)?;
                    offset += 1;
                }
                let count = [
                    Value::Int(id1),
                    Value::Int(FIRST_LINK_TYPE + ty),
                    Value::Int(n as i64),
                    Value::Int(newest),
                    Value::Int(0),
                ];
                db.insert(&tx, t[COUNT], &count).map_err(e)?;
                rows += n + 1;
            }
            if rows >= 1000 {
                db.commit(tx).map_err(e)?;
                tx = db.begin();
                rows = 0;
            }
        }
        db.commit(tx).map_err(e)?;
        self.next_node = self.nodes + 1;
        Ok(())
    }

    fn transaction(&mut self, db: &mut Database, _terminal: usize, rng: &mut ChaCha8Rng) -> TxResult {
        let r = rng.gen::<f64>() * 100.0;
        let mut acc = 0.0;
        let drawn = MIX.iter().find(|(_, share)| {
            acc += share;
            r < acc
        });
        // Rounding may leave r at the very top: the last operation.
        let op = drawn.map_or(MIX[MIX.len() - 1].0, |&(op, _)| op);
        let tx = db.begin();
        let (op, operations) = self.run(op, db, &tx, rng)?;
        db.commit(tx).map_err(e)?;
        self.counts[op as usize] += 1;
        Ok(TxOutcome { committed: true, operations, kind: op.name() })
    }

    fn check(&mut self, db: &mut Database) -> Result<(), String> {
        let t = self.ids(db)?;
        let tx = db.begin();
        // One row at a time (only the node ids and the visible counts are kept); rows
        // come in storage order, so of several problems the one first in key order is
        // named, as a scan in key order would.
        let mut nodes = HashSet::new();
        db.for_each_row(&tx, t[NODE], |r| {
            nodes.insert(int(&r[0]));
        })
        .map_err(e)?;
        let mut visible: HashMap<(i64, i64), i64> = HashMap::new();
        let mut first = FirstProblem::default();
        db.for_each_row(&tx, t[LINK], |l| {
            let (id1, ty, id2, v) = (int(&l[0]), int(&l[1]), int(&l[2]), int(&l[L_VISIBILITY]));
            if !nodes.contains(&id1) {
                first.note((id1, ty, id2), || format!("link ({id1}, {ty}, {id2}) dangles: node {id1} is gone"));
            }
            match v {
                VISIBLE => *visible.entry((id1, ty)).or_default() += 1,
                HIDDEN => {}
                _ => first.note((id1, ty, id2), || format!("link ({id1}, {ty}, {id2}) has visibility {v}")),
            }
        })
        .map_err(e)?;
        first.result()?;
        let mut counted = HashSet::new();
        db.for_each_row(&tx, t[COUNT], |c| {
            let (id1, ty, count) = (int(&c[0]), int(&c[1]), int(&c[2]));
            let links = visible.get(&(id1, ty)).copied().unwrap_or(0);
            if count != links {
                first
                    .note((id1, ty, 0), || format!("counttable ({id1}, {ty}) says {count} links, {links} are visible"));
            }
            counted.insert((id1, ty));
        })
        .map_err(e)?;
        first.result()?;
        if let Some((id1, ty)) = visible.keys().filter(|k| !counted.contains(k)).min() {
            return Err(format!("({id1}, {ty}) has {} visible links and no counttable row", visible[&(*id1, *ty)]));
        }
        db.commit(tx).map_err(e)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{self, Control, DriverConfig};
    use engine::db::BufferSize;
    use engine::DbOptions;
    use nand::{CellType, Device, Geometry, Latencies, MemoryStorage};
    use rand::SeedableRng;

    fn database(ipa: &str) -> Database {
        let geometry = Geometry {
            channels: 2,
            chips_per_channel: 2,
            blocks_per_chip: 256,
            pages_per_block: 64,
            page_bytes: 4096,
            oob_bytes: 128,
            cell: CellType::Slc,
            nop: 4,
            endurance: 1_000_000,
            latencies: Latencies::mlc_typical(),
        };
        let device = Device::new(Box::new(MemoryStorage::new(geometry, true)));
        let mut db = Database::create(device, DbOptions { buffer: BufferSize::Pages(2048), ..DbOptions::default() })
            .expect("a database on an empty device");
        let region = if ipa == "0x0" { "IPA_MODE=none".to_string() } else { format!("IPA_MODE=slc, IPA={ipa}") };
        db.execute(&format!("CREATE REGION data ({region}); CREATE TABLESPACE ts (REGION=data);")).unwrap();
        db
    }

    fn loaded(nodes: i64, ipa: &str, seed: u64) -> (Database, Linkbench, ChaCha8Rng) {
        let mut db = database(ipa);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut lb = Linkbench::new(nodes, rng.gen());
        lb.load(&mut db, &|_| "ts".to_string(), &mut rng).unwrap();
        (db, lb, rng)
    }

    #[test]
    fn out_degree_follows_linkbench_nlinks_table() {
        let lb = Linkbench::new(1_000_000, 42);
        let degrees: Vec<u64> = (1..=200_000).map(|id| lb.degree(id)).collect();
        let share = |f: &dyn Fn(u64) -> bool| degrees.iter().filter(|&&d| f(d)).count() as f64 / degrees.len() as f64;
        // LinkBench's Distribution.dat: 45.3% no link, 77.5% at most one, 99.83% at most 100.
        assert!((share(&|d| d == 0) - 0.453).abs() < 0.01, "{}", share(&|d| d == 0));
        assert!((share(&|d| d <= 1) - 0.775).abs() < 0.01, "{}", share(&|d| d <= 1));
        assert!((share(&|d| d <= 100) - 0.9983).abs() < 0.001, "{}", share(&|d| d <= 100));
        let mean = degrees.iter().sum::<u64>() as f64 / degrees.len() as f64;
        assert!((1.9..2.7).contains(&mean), "mean degree {mean}");
        assert!(degrees.iter().all(|&d| d <= MAX_DEGREE));
        // Split over the two types without losing a link.
        assert!((1..=1000).all(|id| lb.degree_of_type(id, 0) + lb.degree_of_type(id, 1) == lb.degree(id)));
    }

    #[test]
    fn zipf_ranks_are_skewed_and_in_range() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (n, theta) in [(2u64, 0.8), (1000, 0.8), (1_000_000, 0.606)] {
            let z = Zipf::new(n, theta);
            let draws: Vec<u64> = (0..100_000).map(|_| z.rank(&mut rng)).collect();
            assert!(draws.iter().all(|&r| r < n));
            let top = draws.iter().filter(|&&r| r == 0).count() as f64 / draws.len() as f64;
            assert!((top - 1.0 / z.zetan).abs() < 0.01, "n {n}: rank 0 drawn {top}, expected {}", 1.0 / z.zetan);
            if n > 2 {
                let upper_half = draws.iter().filter(|&&r| r >= n / 2).count() as f64 / draws.len() as f64;
                let expected = 1.0 - harmonic(n / 2, theta) / z.zetan;
                assert!((upper_half - expected).abs() < 0.02, "n {n}: {upper_half} vs {expected}");
            }
        }
        // The approximation of the harmonic sum against the sum itself.
        let exact: f64 = (1..=50_000u64).map(|k| (k as f64).powf(-0.741)).sum();
        assert!((harmonic(50_000, 0.741) - exact).abs() < 1e-6 * exact);
    }

    #[test]
    fn payload_sizes_have_linkbench_medians() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for (median, max) in [(NODE_DATA_MEDIAN, MAX_NODE_DATA), (LINK_DATA_MEDIAN, MAX_LINK_DATA)] {
            let mut sizes: Vec<usize> = (0..20_001).map(|_| payload_bytes(&mut rng, median, max)).collect();
            sizes.sort_unstable();
            let m = sizes[sizes.len() / 2] as f64;
            assert!((m - median).abs() <= median * 0.05 + 1.0, "median {m}, wanted {median}");
            assert!(sizes.iter().all(|&s| s < max));
        }
        let mut sizes = (0..20_000).map(|_| multiget_size(&mut rng));
        let (ones, mean) = sizes.by_ref().fold((0u64, 0u64), |(o, s), n| (o + u64::from(n == 1), s + n));
        assert!((ones as f64 / 20_000.0 - MULTIGET_P).abs() < 0.015, "{ones}");
        assert!((mean as f64 / 20_000.0 - 1.0 / MULTIGET_P).abs() < 0.1, "{mean}");
    }

    #[test]
    fn operation_shares_match_the_mix_and_counts_stay_exact() {
        let (mut db, mut lb, mut rng) = loaded(3000, "2x3", 5);
        assert_eq!(lb.check(&mut db), Ok(()), "after the load");
        let n = 30_000;
        for _ in 0..n {
            lb.transaction(&mut db, 0, &mut rng).unwrap();
        }
        let counts: HashMap<Op, u64> = lb.op_counts().collect();
        assert_eq!(counts.values().sum::<u64>(), n);
        let mut expected: HashMap<Op, f64> = MIX.iter().map(|&(op, share)| (op, share / 100.0)).collect();
        let get = expected[&Op::GetLink];
        expected.insert(Op::GetLink, get * MULTIGET_P);
        expected.insert(Op::MultigetLink, get * (1.0 - MULTIGET_P));
        for op in Op::ALL {
            let p = expected[&op];
            let got = counts[&op] as f64 / n as f64;
            // Four standard deviations of a binomial share.
            let tolerance = 4.0 * (p * (1.0 - p) / n as f64).sqrt();
            assert!((got - p).abs() <= tolerance, "{}: {got:.4}, expected {p:.4} ± {tolerance:.4}", op.name());
        }
        assert_eq!(lb.check(&mut db), Ok(()), "after {n} operations");
        // Deletes did delete: nodes are gone, links hidden.
        let t = lb.ids(&mut db).unwrap();
        let tx = db.begin();
        let nodes = db.scan(&tx, t[NODE], &[], &[]).unwrap().len() as i64;
        let hidden =
            db.scan(&tx, t[LINK], &[], &[]).unwrap().iter().filter(|l| int(&l[L_VISIBILITY]) == HIDDEN).count();
        db.commit(tx).unwrap();
        assert!(nodes < lb.next_node - 1 - 100, "{nodes} nodes of {} added or loaded", lb.next_node - 1);
        assert!(hidden > 100, "{hidden} hidden links");
    }

    #[test]
    fn check_names_a_wrong_count_and_a_dangling_link() {
        let (mut db, mut lb, _) = loaded(300, "0x0", 6);
        let t = lb.ids(&mut db).unwrap();
        let tx = db.begin();
        let links = db.scan(&tx, t[LINK], &[], &[]).unwrap();
        let (id1, ty) = (int(&links[0][0]), int(&links[0][1]));
        db.add(&tx, t[COUNT], &[Value::Int(id1), Value::Int(ty)], 2, &Value::Int(1)).unwrap();
        db.commit(tx).unwrap();
        let err = lb.check(&mut db).unwrap_err();
        assert!(err.starts_with(&format!("counttable ({id1}, {ty}) says")), "{err}");
        let tx = db.begin();
        db.add(&tx, t[COUNT], &[Value::Int(id1), Value::Int(ty)], 2, &Value::Int(-1)).unwrap();
        db.delete(&tx, t[NODE], &[Value::Int(id1)]).unwrap();
        db.commit(tx).unwrap();
        let err = lb.check(&mut db).unwrap_err();
        assert!(err.contains(&format!("node {id1} is gone")), "{err}");
    }

    /// A bad visibility and a missing count row are named too, and of two problems of
    /// a kind the one first in key order (rows reach the check in storage order).
    #[test]
    fn check_names_a_bad_visibility_and_a_missing_count_first_in_key_order() {
        let (mut db, mut lb, _) = loaded(300, "0x0", 6);
        let t = lb.ids(&mut db).unwrap();
        let tx = db.begin();
        let links = db.scan(&tx, t[LINK], &[], &[]).unwrap();
        let visible: Vec<&Vec<Value>> = links.iter().filter(|l| int(&l[L_VISIBILITY]) == VISIBLE).collect();
        let (first, last) = (visible[0], visible[visible.len() - 1]);
        assert!(int(&first[0]) < int(&last[0]), "two links of different nodes");
        let key = |l: &Vec<Value>| l[..3].to_vec();
        for l in [last, first] {
            db.update(&tx, t[LINK], &key(l), &[(L_VISIBILITY, Value::Int(7))]).unwrap();
        }
        db.commit(tx).unwrap();
        let err = lb.check(&mut db).unwrap_err();
        let (id1, ty, id2) = (int(&first[0]), int(&first[1]), int(&first[2]));
        assert_eq!(err, format!("link ({id1}, {ty}, {id2}) has visibility 7"));
        let tx = db.begin();
        for l in [last, first] {
            db.update(&tx, t[LINK], &key(l), &[(L_VISIBILITY, Value::Int(VISIBLE))]).unwrap();
            db.delete(&tx, t[COUNT], &l[..2]).unwrap();
        }
        db.commit(tx).unwrap();
        let err = lb.check(&mut db).unwrap_err();
        assert!(err.starts_with(&format!("({id1}, {ty}) has ")) && err.ends_with("no counttable row"), "{err}");
    }

    /// Node and link payloads, by key.
    fn payloads(db: &mut Database, lb: &mut Linkbench) -> HashMap<Vec<i64>, Value> {
        let t = lb.ids(db).unwrap();
        let tx = db.begin();
        let nodes = db.scan(&tx, t[NODE], &[], &[]).unwrap().into_iter().map(|r| (vec![int(&r[0])], r[4].clone()));
        let links = db.scan(&tx, t[LINK], &[], &[]).unwrap().into_iter();
        let links = links.map(|r| (vec![int(&r[0]), int(&r[1]), int(&r[2])], r[L_DATA].clone()));
        let all = nodes.chain(links).collect();
        db.commit(tx).unwrap();
        all
    }

    /// With every update keeping its payload, updates change only numeric fields: no
    /// payload of a node or link on both sides of the run differs. With none keeping
    /// it (LinkBench's own), most updated payloads differ; with a third, in between.
    #[test]
    fn updates_keep_the_payload_at_the_share_asked() {
        let changed = |share: f64| {
            let (mut db, mut lb, mut rng) = loaded(300, "0x0", 8);
            lb.keep_payload_share = share;
            let before = payloads(&mut db, &mut lb);
            for _ in 0..3000 {
                lb.transaction(&mut db, 0, &mut rng).unwrap();
            }
            assert_eq!(lb.check(&mut db), Ok(()));
            let after = payloads(&mut db, &mut lb);
            after.iter().filter(|(k, v)| before.get(*k).is_some_and(|b| b != *v)).count()
        };
        let (none, third, all) = (changed(0.0), changed(1.0 / 3.0), changed(1.0));
        assert_eq!(all, 0);
        assert!(none > 100, "{none} payloads rewritten by LinkBench's own updates");
        assert!(third > none / 2 && third < none, "a third keep theirs: {third} of {none} rewritten");
    }

    fn driven(ipa: &str) -> (driver::Metrics, Vec<(Op, u64)>) {
        let (mut db, mut lb, mut rng) = loaded(2000, ipa, 7);
        db.set_buffer(BufferSize::Share(0.2)).unwrap();
        let config = DriverConfig {
            terminals: 4,
            warmup_s: 0.2,
            duration_s: 1.0,
            cpu_ns_per_operation: 10_000,
            progress_s: 0.5,
            switch: None,
            max_transactions: None,
        };
        let m = driver::run(&mut db, &mut lb, &config, &mut rng, &mut |_| Control::Continue).unwrap();
        assert_eq!(lb.check(&mut db), Ok(()), "{ipa}");
        (m, lb.op_counts().collect())
    }

    #[test]
    fn driven_runs_are_consistent_and_deterministic() {
        let (plain, _) = driven("0x0");
        assert!(plain.committed_transactions > 500, "{}", plain.committed_transactions);
        assert_eq!(plain.in_place_appends, 0);
        let (a, counts_a) = driven("2x3");
        let (b, counts_b) = driven("2x3");
        assert!(a.in_place_appends > 0, "IPA [2x3] appends");
        assert_eq!(counts_a, counts_b);
        assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    }
}
