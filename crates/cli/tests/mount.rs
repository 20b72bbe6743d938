//! `deltaflash mount` end to end: real FUSE mounts, loop devices and ext4 (they need
//! root and /dev/fuse; without them each test says so and passes nothing). Every test
//! undoes what it mounted or attached through a guard, also when it fails.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn can_mount() -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root || !Path::new("/dev/fuse").exists() {
        eprintln!("skipped: mounting needs root and /dev/fuse");
        return false;
    }
    true
}

/// A running `deltaflash mount` and everything it may leave behind when killed.
struct Session {
    child: Option<Child>,
    mnt: PathBuf,
    at: Option<PathBuf>,
}

impl Session {
    fn start(dir: &Path, image: &Path, storage: &str, ext4: bool) -> Session {
        Session::start_with(dir, image, storage, ext4, &[])
    }

    fn start_with(dir: &Path, image: &Path, storage: &str, ext4: bool, extra: &[&str]) -> Session {
        let mnt = dir.join("mnt");
        let at = dir.join("fs");
        std::fs::create_dir_all(&mnt).unwrap();
        std::fs::create_dir_all(&at).unwrap();
        let mut args: Vec<String> = ["mount", "--storage", storage, "--blocks-per-chip", "64", "--image"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(image.display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        if ext4 {
            args.extend(["--fs".into(), "ext4".into(), "--at".into(), at.display().to_string()]);
        }
        args.push(mnt.display().to_string());
        let log = dir.join("mount.log");
        let stderr = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(&args).stderr(stderr).spawn().unwrap();
        let mut session = Session { child: Some(child), mnt, at: ext4.then_some(at) };
        session.wait_until_ready(&log);
        session
    }

    fn wait_until_ready(&mut self, log: &Path) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let ready = |s: &Session| s.mnt.join("disk").exists() && s.at.as_ref().is_none_or(|at| mount::is_mounted(at));
        while !ready(self) {
            let said = || std::fs::read_to_string(log).unwrap_or_default();
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("deltaflash mount ended with {status}: {}", said());
            }
            assert!(Instant::now() < deadline, "the mount did not come up in 60 s: {}", said());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn disk(&self) -> PathBuf {
        self.mnt.join("disk")
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.mnt.join("stats.json")).unwrap()).unwrap()
    }

    /// A power cut: SIGKILL, then the cleanup a dead session needs.
    fn kill_9(mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
        self.clean_up();
    }

    /// The orderly end, through `deltaflash unmount` on the --at directory if there is one.
    fn unmount(mut self) {
        let dir = self.at.clone().unwrap_or_else(|| self.mnt.clone());
        let out = Command::new(env!("CARGO_BIN_EXE_deltaflash")).arg("unmount").arg(&dir).output().unwrap();
        assert!(out.status.success(), "unmount failed: {}", String::from_utf8_lossy(&out.stderr));
        let status = self.child.take().unwrap().wait().unwrap();
        assert!(status.success(), "the mount process ended with {status}");
        assert!(!mount::is_mounted(&self.mnt) && !self.at.as_ref().is_some_and(|a| mount::is_mounted(a)));
    }

    fn clean_up(&mut self) {
        if let Some(at) = &self.at {
            let loops: Vec<String> = mount::mount_table()
                .into_iter()
                .filter(|m| Some(&m.at) == at.canonicalize().ok().as_ref())
                .map(|m| m.source)
                .collect();
            if mount::is_mounted(at) {
                let _ = Command::new("umount").arg("-l").arg(at).status();
            }
            for dev in loops {
                let _ = Command::new("losetup").arg("-d").arg(dev).status();
            }
        }
        if mount::is_mounted(&self.mnt) {
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.clean_up();
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Unaligned writes (read-modify-write), a punched hole and fsync on each storage;
/// a kill -9 after the fsync loses none of it.
#[test]
fn the_disk_keeps_what_fsync_covered_through_a_kill_9() {
    if !can_mount() {
        return;
    }
    for storage in ["ftl:page", "ftl:dftl", "noftl"] {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("dev.img");
        let session = Session::start(dir.path(), &image, storage, false);
        let file = OpenOptions::new().read(true).write(true).open(session.disk()).unwrap();
        let data = pattern(3 * 4096 + 1000, 7);
        file.write_all_at(&data, 4096 + 512).unwrap();
        file.write_all_at(&pattern(20_000, 9), 1 << 20).unwrap();
        // Punch the middle of the second range: two partial pages and whole ones.
        rustix::fs::fallocate(
            &file,
            rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
            (1 << 20) + 1000,
            10_000,
        )
        .unwrap();
        file.sync_data().unwrap();
        let mut back = vec![0u8; data.len()];
        file.read_exact_at(&mut back, 4096 + 512).unwrap();
        assert_eq!(back, data, "{storage}: read back before the cut");
        let stats = session.stats();
        assert!(stats["rmw_pages"].as_u64().unwrap() >= 2, "{storage}: {stats}");
        assert!(stats["host_trims"].as_u64().unwrap() >= 1, "{storage}: {stats}");
        assert!(stats["flushes"].as_u64().unwrap() >= 1, "{storage}: {stats}");
        assert!(stats["flash_programs"].as_u64().unwrap() >= stats["host_writes"].as_u64().unwrap());
        assert!(stats["write_latency_us"]["p99"].as_f64().unwrap() > 0.0, "{storage}: {stats}");
        drop(file);
        session.kill_9();

        let session = Session::start(dir.path(), &image, storage, false);
        let file = OpenOptions::new().read(true).open(session.disk()).unwrap();
        file.read_exact_at(&mut back, 4096 + 512).unwrap();
        assert_eq!(back, data, "{storage}: after the kill -9");
        let mut second = vec![0u8; 20_000];
        file.read_exact_at(&mut second, 1 << 20).unwrap();
        let mut want = pattern(20_000, 9);
        want[1000..11_000].fill(0);
        assert_eq!(second, want, "{storage}: the hole after the kill -9");
        drop(file);
        session.unmount();
    }
}

/// ext4 on the disk: a file fsynced before a kill -9 is there after the journal replay
/// of the next mount, and `fsck.ext4 -n` finds the file system clean.
#[test]
fn ext4_on_the_disk_survives_a_kill_9_and_checks_clean() {
    if !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("dev.img");
    let session = Session::start(dir.path(), &image, "ftl:page", true);
    let at = session.at.clone().unwrap();
    let body = pattern(100_000, 3);
    let file = at.join("kept.bin");
    std::fs::write(&file, &body).unwrap();
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    std::fs::File::open(&at).unwrap().sync_all().unwrap();
    session.kill_9();

    let session = Session::start(dir.path(), &image, "ftl:page", true);
    assert_eq!(std::fs::read(&file).unwrap(), body, "the fsynced file after the kill -9");
    session.unmount();

    let session = Session::start(dir.path(), &image, "ftl:page", false);
    let out = Command::new("fsck.ext4").arg("-n").arg(session.disk()).output().unwrap();
    assert!(
        out.status.success(),
        "fsck.ext4 -n: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    session.unmount();

    // A clean unmount and remount keeps it too.
    let session = Session::start(dir.path(), &image, "ftl:page", true);
    assert_eq!(std::fs::read(&file).unwrap(), body, "the file after a clean unmount and remount");
    session.unmount();
}

fn deltaflash(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_deltaflash")).args(args).output().unwrap()
}

fn loops_over(file: &Path) -> String {
    let out = Command::new("losetup").arg("-j").arg(file).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Refusals before anything is mounted, and a failure part-way (mkfs on a disk too small
/// for ext4) that undoes the loop device and the FUSE mount it had set up.
#[test]
fn bad_input_is_refused_and_leaves_nothing_mounted() {
    if !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::fs::write(mnt.join("mine.txt"), "a user's file").unwrap();
    let image = dir.path().join("dev.img");
    let out = deltaflash(&["mount", "--image", image.to_str().unwrap(), mnt.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!image.exists(), "a refused mount created the image");
    assert_eq!(std::fs::read_to_string(mnt.join("mine.txt")).unwrap(), "a user's file");

    // An image another session holds.
    let held = tempfile::tempdir().unwrap();
    let session = Session::start(held.path(), &held.path().join("dev.img"), "ftl:page", false);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let img = held.path().join("dev.img");
    let out = deltaflash(&["mount", "--image", img.to_str().unwrap(), empty.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("locked"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!mount::is_mounted(&empty));
    session.unmount();

    // No /dev/fuse (a mount namespace with an empty /dev): refused before anything is made.
    let bin = env!("CARGO_BIN_EXE_deltaflash");
    let script = format!(
        "mount -t tmpfs tmpfs /dev && exec {bin} mount --image {} {}",
        dir.path().join("nofuse.img").display(),
        empty.display()
    );
    let out = Command::new("unshare").args(["-m", "sh", "-c", &script]).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("/dev/fuse is missing"), "{said}");
    assert!(!dir.path().join("nofuse.img").exists(), "a refused mount created the image");

    // mkfs fails on a 16 KiB disk: the loop device and the FUSE mount are undone.
    let at = dir.path().join("fs");
    std::fs::create_dir(&at).unwrap();
    let tiny = dir.path().join("tiny.img");
    let out = deltaflash(&[
        "mount",
        "--storage",
        "noftl",
        "--chips",
        "1",
        "--blocks-per-chip",
        "16",
        "--pages-per-block",
        "4",
        "--page-bytes",
        "512",
        "--over-provisioning",
        "0.5",
        "--image",
        tiny.to_str().unwrap(),
        "--fs",
        "ext4",
        "--at",
        at.to_str().unwrap(),
        empty.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "mkfs.ext4 on 16 KiB succeeded?");
    assert!(String::from_utf8_lossy(&out.stderr).contains("mkfs.ext4"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!mount::is_mounted(&empty) && !mount::is_mounted(&at));
    assert_eq!(loops_over(&empty.join("disk")), "", "a loop device stayed attached");
}

/// A punched hole reaches the FTL: rewriting a full disk whose pages were trimmed first
/// makes GC copy far fewer pages than rewriting the same disk untrimmed.
#[test]
fn trim_reaches_the_ftl_and_saves_gc_copies() {
    if !can_mount() {
        return;
    }
    let migrations = |punch: bool| {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
            .args(["mount", "--storage", "ftl:page", "--chips", "2", "--blocks-per-chip", "64"])
            .arg(&mnt)
            .stderr(log)
            .spawn()
            .unwrap();
        let mut session = Session { child: None, mnt: mnt.clone(), at: None };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !mnt.join("disk").exists() {
            assert!(child.try_wait().unwrap().is_none() && Instant::now() < deadline, "the mount did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
        session.child = Some(child);
        let file = OpenOptions::new().read(true).write(true).open(session.disk()).unwrap();
        let size = file.metadata().unwrap().len();
        let chunk = vec![0x5au8; 1 << 20];
        let mut at = 0;
        while at < size {
            let n = chunk.len().min((size - at) as usize);
            file.write_all_at(&chunk[..n], at).unwrap();
            at += n as u64;
        }
        if punch {
            rustix::fs::fallocate(
                &file,
                rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
                0,
                size,
            )
            .unwrap();
        }
        // Random 4 KiB overwrites over the whole disk, as much as its size.
        let pages = size / 4096;
        let mut x: u64 = 12345;
        for _ in 0..pages {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            file.write_all_at(&chunk[..4096], (x >> 33) % pages * 4096).unwrap();
        }
        drop(file);
        let gc = session.stats()["gc_page_migrations"].as_u64().unwrap();
        session.unmount();
        gc
    };
    let (kept, trimmed) = (migrations(false), migrations(true));
    assert!(kept > 0, "the untrimmed rewrite made GC copy nothing");
    assert!(trimmed * 2 < kept, "GC copies with trim {trimmed}, without {kept}");
}

/// `--latency emulate`: a program waits for the device, so its writes take at least the
/// simulated latencies the stats report.
#[test]
fn emulated_latency_holds_each_request_until_its_simulated_completion() {
    if !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::start_with(dir.path(), &dir.path().join("dev.img"), "ftl:page", false, &["--latency", "emulate"]);
    let file = OpenOptions::new().write(true).open(session.disk()).unwrap();
    let started = Instant::now();
    for i in 0..200u64 {
        file.write_all_at(&[7u8; 4096], i * 4096).unwrap();
    }
    let elapsed = started.elapsed();
    drop(file);
    let stats = session.stats();
    let latency = &stats["write_latency_us"];
    assert_eq!(latency["count"].as_u64(), Some(200), "{stats}");
    // At least half the writes took p50 or longer.
    let floor = Duration::from_secs_f64(100.0 * latency["p50"].as_f64().unwrap() / 1e6);
    assert!(elapsed >= floor, "200 writes took {elapsed:?}, under the simulated {floor:?}");
    assert_eq!(stats["latency_mode"], "emulate");
    session.unmount();
}
