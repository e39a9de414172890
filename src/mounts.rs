//! What the kernel says about mounts without asking any of them: its list of mounts
//! (`/proc/self/mountinfo`), and a FUSE mount's connection in fusectl
//! (`/sys/fs/fuse/connections/<N>`). A look at a FUSE mount point (a `stat`, a
//! `canonicalize`) is a request its driver must answer; one that does not answer keeps
//! the looker waiting, so the driver, `--unmount` and the cgroup search use these
//! instead. Elsewhere than Linux only the reading of a list is used (there is no list,
//! and no fusectl).
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// One line of the list of mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The device number of its superblock, as the kernel spells it (`major << 20 |
    /// minor`): a FUSE mount's connection has this number in fusectl.
    pub device: u64,
    pub mount_point: PathBuf,
    pub fstype: String,
}

impl Entry {
    pub fn is_fuse(&self) -> bool {
        self.fstype == "fuse" || self.fstype == "fuseblk" || self.fstype.starts_with("fuse.")
    }
}

/// The mounts in mountinfo text `list`, in its order (a later one over an earlier one
/// at the same point). Lines it cannot read are left out.
pub fn entries(list: &[u8]) -> impl Iterator<Item = Entry> + '_ {
    list.split(|&b| b == b'\n').filter_map(|line| {
        let mut fields = line.split(|&b| b == b' ');
        let device = std::str::from_utf8(fields.nth(2)?).ok()?;
        let (major, minor) = device.split_once(':')?;
        let device = (major.parse::<u64>().ok()? << 20) | minor.parse::<u64>().ok()?;
        let mount_point = unescape_octal(fields.nth(1)?);
        // The file system type follows the separator after the optional fields.
        let fstype = line
            .windows(3)
            .position(|w| w == b" - ")
            .and_then(|at| line[at + 3..].split(|&b| b == b' ').next())
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .unwrap_or_default();
        Some(Entry {
            device,
            mount_point: PathBuf::from(OsString::from_vec(mount_point)),
            fstype,
        })
    })
}

/// This process's list of mounts (empty where there is none: not Linux).
pub fn read_list() -> Vec<u8> {
    std::fs::read("/proc/self/mountinfo").unwrap_or_default()
}

/// The topmost mount at `mount_point` in `list`, if any.
pub fn find(list: &[u8], mount_point: &Path) -> Option<Entry> {
    entries(list)
        .filter(|entry| entry.mount_point == mount_point)
        .last()
}

/// Undoes the list's escapes: a space, tab, newline or backslash is written in octal
/// (`\040`).
fn unescape_octal(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let digits = field
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (field[i], digits) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// How the list would spell a mount at `path`, found without a look at `path` itself:
/// its parent resolved, its last component followed while it is a symbolic link (a
/// `readlink` there asks no driver: a mount point is no link).
pub fn listed_name(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return path;
        };
        let parent = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
        let resolved = parent.join(name);
        match std::fs::read_link(&resolved) {
            Ok(target) => path = parent.join(target),
            Err(_) => return resolved,
        }
    }
    path
}

/// Where fusectl shows FUSE connections.
pub const FUSECTL: &str = "/sys/fs/fuse/connections";

/// Why a FUSE connection in fusectl cannot be watched or aborted.
#[derive(Debug)]
pub enum ConnectionError {
    /// fusectl was not mounted, and mounting it failed (it takes root).
    NoFusectl(std::io::Error),
    /// A file of fusectl could not be opened or written.
    File {
        path: PathBuf,
        doing: &'static str,
        error: std::io::Error,
    },
}

impl std::fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectionError::NoFusectl(error) => write!(
                f,
                "fusectl is not mounted at {FUSECTL} and mounting it failed ({error})"
            ),
            ConnectionError::File { path, doing, error } => {
                write!(f, "cannot {doing} {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for ConnectionError {}

/// One FUSE connection's directory in fusectl, held open: it stays the directory of
/// that connection even once a later mount takes its number.
#[derive(Debug)]
pub struct Connection {
    dir: std::fs::File,
    number: u64,
    /// Whether opening it mounted fusectl (it was not mounted).
    pub mounted_fusectl: bool,
}

impl Connection {
    /// Opens connection `number`'s directory, mounting fusectl first where it is not
    /// mounted (which takes root). The caller checks afterwards that the mount it
    /// belongs to is still listed: a number is reused only once its mount is gone.
    pub fn open(number: u64) -> Result<Connection, ConnectionError> {
        let mounted = entries(&read_list())
            .any(|entry| entry.fstype == "fusectl" && entry.mount_point == Path::new(FUSECTL));
        if !mounted {
            mount_fusectl().map_err(ConnectionError::NoFusectl)?;
        }
        let path = Path::new(FUSECTL).join(number.to_string());
        let dir = std::fs::File::open(&path).map_err(|error| ConnectionError::File {
            path,
            doing: "open",
            error,
        })?;
        Ok(Connection {
            dir,
            number,
            mounted_fusectl: !mounted,
        })
    }

    /// The file that aborts it.
    pub fn abort_path(&self) -> PathBuf {
        Path::new(FUSECTL)
            .join(self.number.to_string())
            .join("abort")
    }

    /// Whether the kernel has let go of it: its mount is gone and no file of it is
    /// open. (fusectl then removes its files, or they read as empty.)
    pub fn gone(&self) -> bool {
        use std::io::Read;
        match self.file("waiting", libc::O_RDONLY) {
            Ok(mut file) => {
                let mut text = String::new();
                file.read_to_string(&mut text).is_ok() && text.is_empty()
            }
            Err(e) => e.raw_os_error() == Some(libc::ENOENT),
        }
    }

    /// Ends every request it has (and every later one) with an error: readers and
    /// writers waiting on it return, and its driver's session ends.
    pub fn abort(&self) -> Result<(), ConnectionError> {
        use std::io::Write;
        let failed = |doing, error| ConnectionError::File {
            path: self.abort_path(),
            doing,
            error,
        };
        match self.file("abort", libc::O_WRONLY) {
            Ok(mut file) => file.write_all(b"1").map_err(|e| failed("write", e)),
            // Gone already: nothing is left to abort.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            Err(e) => Err(failed("open", e)),
        }
    }

    /// A file of this connection's directory, opened through the held directory.
    fn file(&self, name: &str, flags: libc::c_int) -> std::io::Result<std::fs::File> {
        use std::os::fd::AsFd;
        let name = std::ffi::CString::new(name).expect("a name without NUL");
        open_at(self.dir.as_fd(), &name, flags)
    }
}

/// Opens `name` relative to the open directory `dir` (close-on-exec): no path to build,
/// and none to look up again from the root.
pub fn open_at(
    dir: std::os::fd::BorrowedFd,
    name: &std::ffi::CStr,
    flags: libc::c_int,
) -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: a directory descriptor borrowed for the call, a valid C string; the new
    // descriptor is owned by the returned file alone.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

#[cfg(target_os = "linux")]
fn mount_fusectl() -> std::io::Result<()> {
    let target = std::ffi::CString::new(FUSECTL).expect("a path without NUL");
    let name = c"fusectl";
    // SAFETY: valid C strings and no data.
    let rc = unsafe {
        libc::mount(
            name.as_ptr(),
            target.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn mount_fusectl() -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_is_found_in_the_kernels_list_with_its_escapes_undone() {
        let list = b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
            97 22 0:52 / /tmp/a\\040b\\134c rw,nosuid - fuse.terminalfs terminalfs rw\n\
            98 22 0:53 / /tmp/plain rw - fuse terminalfs rw\n\
            99 22 0:54 / /tmp/plain rw shared:7 master:2 - tmpfs tmpfs rw\n\
            100 22 259:3 / /mnt/disk rw - fuseblk /dev/sdb1 rw\n";
        let spaced = find(list, Path::new("/tmp/a b\\c")).expect("listed");
        assert_eq!(spaced.device, 52);
        assert_eq!(spaced.fstype, "fuse.terminalfs");
        assert!(spaced.is_fuse());
        // Two mounts at one point: the later one is on top.
        let plain = find(list, Path::new("/tmp/plain")).expect("listed");
        assert_eq!((plain.device, plain.fstype.as_str()), (54, "tmpfs"));
        assert!(!plain.is_fuse());
        let disk = find(list, Path::new("/mnt/disk")).expect("listed");
        assert_eq!(disk.device, (259 << 20) | 3);
        assert!(disk.is_fuse());
        assert_eq!(
            find(list, Path::new("/")).map(|e| e.device),
            Some((8 << 20) | 1)
        );
        assert_eq!(find(list, Path::new("/tmp/a")), None);
        assert_eq!(find(list, Path::new("/tmp/a\\040b\\134c")), None);
        assert_eq!(find(b"", Path::new("/tmp/plain")), None);
        // A backslash not followed by three octal digits is itself.
        assert_eq!(unescape_octal(b"x\\09y\\"), b"x\\09y\\");
    }

    #[test]
    fn a_listed_name_resolves_the_parent_and_a_link_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("mnt")).unwrap();
        std::os::unix::fs::symlink(&real, real.join("up")).unwrap();
        std::os::unix::fs::symlink("mnt", real.join("link")).unwrap();
        assert_eq!(listed_name(&real.join("up/mnt")), real.join("mnt"));
        assert_eq!(listed_name(&real.join("up/link")), real.join("mnt"));
        assert_eq!(listed_name(&real.join("missing")), real.join("missing"));
        assert_eq!(listed_name(Path::new("/")), PathBuf::from("/"));
    }
}
