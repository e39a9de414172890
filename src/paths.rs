//! Where the driver keeps its files by default: the XDG base directories, the home
//! directory, and the tag that names a mount's state directory and its cgroups. It
//! sits below every other module, so the spool, the policy and the supervisor can all
//! use it without importing one another.

use std::path::{Path, PathBuf};

/// A short, stable, file-name-safe tag for a mount path.
pub fn tag_for(path: &Path) -> String {
    // FNV-1a: stable across runs and platforms, unlike the std hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The directory an XDG variable names when it holds an absolute path, else `~/<fallback>`.
pub fn xdg_dir(variable: &str, fallback: &str) -> PathBuf {
    match std::env::var_os(variable).map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => home_dir().join(fallback),
    }
}

/// `$HOME`, else the home directory in the password database, else `/`.
pub fn home_dir() -> PathBuf {
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => home,
        _ => password_home().unwrap_or_else(|| PathBuf::from("/")),
    }
}

fn password_home() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;

    let mut buffer = vec![0u8; 4096];
    // SAFETY: `passwd` is plain old data, valid when zeroed.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer refers to memory owned here and lives across the call; the
    // buffer length passed is the buffer's real length.
    let status = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut entry,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &mut result,
        )
    };
    if status != 0 || result.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: on success `pw_dir` points at a NUL-terminated string inside `buffer`.
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    dir.is_absolute().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stable_and_distinct() {
        assert_eq!(tag_for(Path::new("/a")), tag_for(Path::new("/a")));
        assert_ne!(tag_for(Path::new("/a")), tag_for(Path::new("/b")));
        assert_eq!(tag_for(Path::new("/a")).len(), 16);
    }

    #[test]
    fn password_home_is_absolute_when_found() {
        if let Some(home) = password_home() {
            assert!(home.is_absolute());
        }
    }
}
