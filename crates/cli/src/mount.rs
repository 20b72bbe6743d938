//! `deltaflash mount` and `deltaflash unmount`: a storage served as a file through FUSE
//! (the `mount` crate), optionally with ext4 on top, and the orderly end of such a
//! session from another shell.

use crate::setup::{DeviceArgs, RegionArgs};
use clap::{Args, ValueEnum};
use flash::ftl::{FtlConfig, FtlKind};
use flash::{Flash, FtlVolume, IpaMode, PageDevice, RegionId, RegionSpec};
use mount::{Disk, Latency};
use nand::{Device, ImageOptions, MemoryStorage, SimTime, SyncMode};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct MountArgs {
    /// What serves the disk: `noftl` (one NoFTL region over every chip) or `ftl:KIND`
    /// (page, dftl, block, bast, fast, nolgn).
    #[arg(long, default_value = "ftl:page")]
    storage: String,
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    region: RegionArgs,
    /// `counters`: requests run at host speed and the device's simulated time is only
    /// reported; `emulate`: each request completes no earlier than its simulated completion.
    #[arg(long, value_enum, default_value_t = LatencyArg::Counters)]
    latency: LatencyArg,
    /// Put a file system on the disk: a loop device over MOUNTPOINT/disk, the file system
    /// made if the disk holds none, mounted at --at.
    #[arg(long, value_enum, requires = "at")]
    fs: Option<FsKind>,
    /// Where to mount the file system of --fs (an existing directory).
    #[arg(long, requires = "fs")]
    at: Option<PathBuf>,
    /// An existing empty directory: gets `disk` and `stats.json`.
    mountpoint: PathBuf,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LatencyArg {
    Counters,
    Emulate,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FsKind {
    Ext4,
}

#[derive(Args, Debug)]
pub struct UnmountArgs {
    /// The FUSE mount point of `deltaflash mount`, or the --at directory of its file system.
    dir: PathBuf,
}

/// Which storage `--storage` names.
enum StorageChoice {
    Noftl,
    Ftl(FtlKind),
}

fn storage_choice(text: &str) -> Result<StorageChoice, String> {
    if text.eq_ignore_ascii_case("noftl") {
        return Ok(StorageChoice::Noftl);
    }
    text.strip_prefix("ftl:").and_then(FtlKind::parse).map(StorageChoice::Ftl).ok_or_else(|| {
        format!(
            "--storage {}: expected noftl or ftl:page, ftl:dftl, ftl:block, ftl:bast, ftl:fast, ftl:nolgn",
            workloads::limits::quote(text)
        )
    })
}

pub fn run(args: MountArgs) -> Result<(), String> {
    let storage = storage_choice(&args.storage)?;
    check_mountpoint(&args.mountpoint)?;
    if let Some(at) = &args.at {
        check_mountpoint(at).map_err(|e| format!("--at {e}"))?;
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("FUSE is not available here: /dev/fuse is missing (load the fuse module)".into());
    }
    if args.device.no_data {
        return Err("a mounted disk needs page data; drop --no-data".into());
    }
    let (device, now) = open_storage(&args, &storage)?;
    let latency = match args.latency {
        LatencyArg::Counters => Latency::Counters,
        LatencyArg::Emulate => Latency::Emulate,
    };
    let disk = Disk::new(device, RegionId(0), now, latency)?;
    eprintln!("disk of {} bytes in {}-byte pages", disk.size_bytes(), disk.page_bytes());
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| format!("installing a signal handler: {e}"))?;
    }
    let ext4_at = args.fs.and(args.at.as_deref());
    let device = mount::serve(disk, &args.mountpoint, ext4_at, &stop)?;
    device.into_device().storage_mut().flush().map_err(|e| format!("closing the image: {e}"))?;
    eprintln!("unmounted {}", args.mountpoint.display());
    Ok(())
}

/// A mount point must be an existing, empty directory: mounting over files would hide them.
fn check_mountpoint(dir: &Path) -> Result<(), String> {
    let mut entries =
        std::fs::read_dir(dir).map_err(|e| format!("{}: {e} (the directory must exist)", dir.display()))?;
    match entries.next() {
        None => Ok(()),
        Some(_) => Err(format!("{}: not empty (mount on an empty directory)", dir.display())),
    }
}

/// The storage: opened from an existing image (rebuilt from flash, as after a power
/// cut), or made fresh (in a new image, or in memory). Returns it with the simulated
/// time its rebuild ended at.
fn open_storage(args: &MountArgs, storage: &StorageChoice) -> Result<(Box<dyn PageDevice>, SimTime), String> {
    let existing = args.device.image.as_ref().filter(|p| p.exists());
    if let Some(path) = existing {
        let options = ImageOptions { read_only: false, sync: SyncMode::Full };
        let image = MemoryStorage::open_image_with(path, options).map_err(|e| e.to_string())?;
        let device = Device::new(Box::new(image));
        let named = |e: flash::Error| format!("{}: {e}", path.display());
        return match storage {
            StorageChoice::Noftl => {
                let (flash, end) = Flash::open(device, 0).map_err(named)?;
                Ok((Box::new(flash), end))
            }
            StorageChoice::Ftl(kind) => {
                let (ftl, end) = flash::ftl::open(device, 0).map_err(named)?;
                if ftl.kind() != *kind {
                    return Err(format!(
                        "{} holds a {} FTL, not {}: pass --storage ftl:{}",
                        path.display(),
                        ftl.kind().name(),
                        kind.name(),
                        ftl.kind().name()
                    ));
                }
                let (volume, end) = FtlVolume::open(ftl, end).map_err(named)?;
                Ok((Box::new(volume), end))
            }
        };
    }
    match &args.device.image {
        Some(path) => eprintln!("creating {}", path.display()),
        None => eprintln!("an in-memory device: nothing is kept after the unmount"),
    }
    let device = args.device.create_with_sync(SyncMode::Full)?;
    let made = format_storage(device, args, storage);
    if made.is_err() {
        // Leave no unformatted image behind (the file was created just now, by us).
        if let Some(path) = &args.device.image {
            let _ = std::fs::remove_file(path);
        }
    }
    made.map(|device| (device, 0))
}

fn format_storage(device: Device, args: &MountArgs, storage: &StorageChoice) -> Result<Box<dyn PageDevice>, String> {
    let spec = |ipa_mode| RegionSpec::new("disk", ipa_mode);
    match storage {
        StorageChoice::Noftl => {
            let region = RegionSpec { name: "disk".into(), ..args.region.spec(device.geometry(), false)? };
            Flash::format(device, vec![region]).map(|f| Box::new(f) as Box<dyn PageDevice>).map_err(|e| e.to_string())
        }
        StorageChoice::Ftl(kind) => {
            let config = FtlConfig { over_provisioning: args.region.over_provisioning, ..FtlConfig::new(*kind) };
            let ftl = flash::ftl::format(device, &config).map_err(|e| e.to_string())?;
            FtlVolume::format(ftl, vec![spec(IpaMode::None)], 0)
                .map(|v| Box::new(v) as Box<dyn PageDevice>)
                .map_err(|e| e.to_string())
        }
    }
}

/// Ends the `deltaflash mount` session that serves `dir` (its mount point or its file
/// system's): asks the serving process to stop, which unmounts, detaches and closes the
/// image, and waits for it to finish.
pub fn unmount(args: UnmountArgs) -> Result<(), String> {
    let dir = args.dir.canonicalize().map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let stats = serving_dir(&dir)?.join("stats.json");
    let text = std::fs::read_to_string(&stats).map_err(|e| format!("{}: {e}", stats.display()))?;
    let pid = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["pid"].as_u64())
        .ok_or_else(|| format!("{}: no pid of the serving process", stats.display()))?;
    let process = Path::new("/proc").join(pid.to_string());
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).ok_or("a pid of 0 in stats.json")?,
        rustix::process::Signal::TERM,
    )
    .map_err(|e| format!("stopping process {pid}: {e}"))?;
    // Ended: gone, or a zombie its parent has not reaped yet.
    let ended = || std::fs::read_to_string(process.join("stat")).map_or(true, |stat| stat.contains(") Z "));
    for _ in 0..600 {
        if ended() {
            eprintln!("unmounted {}", args.dir.display());
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(format!("process {pid} still serves {} after 60 s", args.dir.display()))
}

/// The FUSE mount point behind `dir`: `dir` itself, or, for a file system on a loop
/// device, the directory of the loop's backing file.
fn serving_dir(dir: &Path) -> Result<PathBuf, String> {
    let table = mount::mount_table();
    let Some(entry) = table.iter().rev().find(|m| m.at == dir) else {
        return Err(format!("nothing is mounted at {}", dir.display()));
    };
    if mount::is_ours(entry) {
        return Ok(dir.to_path_buf());
    }
    let backing = entry
        .source
        .strip_prefix("/dev/")
        .and_then(|name| std::fs::read_to_string(Path::new("/sys/block").join(name).join("loop/backing_file")).ok());
    match backing.as_deref().map(str::trim).and_then(|file| Path::new(file).parent()) {
        Some(parent) => Ok(parent.to_path_buf()),
        None => Err(format!("{} is a {} mount not served by deltaflash mount", dir.display(), entry.fstype)),
    }
}
