//! Captures the git commit the crate is built from as `DELTAFLASH_GIT_COMMIT`, for the
//! experiment results. Without git (a source archive) it is "unknown"; no network.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=DELTAFLASH_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a branch switch), the branch it names, and
    // the packed refs (where a branch lives after `git gc`). Only files that exist: a
    // missing one would rebuild every time.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(&["rev-parse", "--git-path", name]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
