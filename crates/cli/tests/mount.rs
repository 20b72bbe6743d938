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
        let mnt = dir.join("mnt");
        let at = dir.join("fs");
        std::fs::create_dir_all(&mnt).unwrap();
        std::fs::create_dir_all(&at).unwrap();
        let mut args: Vec<String> = ["mount", "--storage", storage, "--blocks-per-chip", "64", "--image"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(image.display().to_string());
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
            let _ = Command::new("umount").arg("-l").arg(at).status();
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
}
