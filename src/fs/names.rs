//! Names and inode numbers of the tree.
//!
//! Fixed directories and pages have small fixed inode numbers. Everything made at run
//! time (a draft, a command directory and its files) takes a fresh id from a counter
//! that never goes back, and its inode numbers are derived from that id, so a reused
//! name always gets new inodes and never a stale cached file.

/// Inode numbers of the fixed part of the tree.
pub const ROOT: u64 = 1;
pub const ROOT_INDEX: u64 = 2;
pub const CTL: u64 = 3;
pub const CTL_INDEX: u64 = 4;
pub const CMD: u64 = 5;
pub const CMD_INDEX: u64 = 6;
pub const SKILLS: u64 = 7;
pub const SKILLS_INDEX: u64 = 8;
pub const SKILLS_TFS: u64 = 9;
pub const SKILLS_TFS_INDEX: u64 = 10;
pub const SKILL_MD: u64 = 11;
pub const EVENTS: u64 = 12;

/// Inodes at or above this are derived from run-time ids.
const DYNAMIC_BASE: u64 = 1 << 20;
/// Inode numbers reserved per id: slot 0 is the draft file or the command directory.
const SLOTS: u64 = 16;

/// A file of a command directory; its number is its inode offset. What each one is
/// (name, mode, when it shows, how it reads) is its row in `slots::ROWS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slot {
    Command = 1,
    Status = 2,
    Pid = 3,
    Kill = 4,
    Exitcode = 5,
    Reason = 6,
    Stdout = 7,
    Stderr = 8,
    Output = 9,
    Follow = 10,
    Wait = 11,
    Result = 12,
    Stdin = 13,
    Screen = 14,
    Keys = 15,
}

impl Slot {
    /// Every slot, in listing order.
    pub fn all() -> impl Iterator<Item = Slot> {
        super::slots::ROWS.iter().map(|row| row.slot)
    }

    pub fn name(self) -> &'static str {
        super::slots::row_of(self).name
    }

    pub fn from_name(name: &str) -> Option<Slot> {
        Slot::all().find(|slot| slot.name() == name)
    }

    fn from_number(number: u64) -> Option<Slot> {
        Slot::all().find(|slot| *slot as u64 == number)
    }

    pub fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// What a dynamic inode number stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dynamic {
    /// The draft file `ctl/<name>` or the directory `cmd/<name>`.
    Entry(u64),
    /// A file inside `cmd/<name>`.
    File(u64, Slot),
}

/// Whether `ino` is of the fixed part of the tree, whose names never change.
pub fn is_fixed(ino: u64) -> bool {
    ino < DYNAMIC_BASE
}

pub fn entry_ino(id: u64) -> u64 {
    DYNAMIC_BASE + id * SLOTS
}

pub fn file_ino(id: u64, slot: Slot) -> u64 {
    DYNAMIC_BASE + id * SLOTS + slot as u64
}

pub fn decode(ino: u64) -> Option<Dynamic> {
    let relative = ino.checked_sub(DYNAMIC_BASE)?;
    let (id, slot) = (relative / SLOTS, relative % SLOTS);
    if slot == 0 {
        Some(Dynamic::Entry(id))
    } else {
        Slot::from_number(slot).map(|slot| Dynamic::File(id, slot))
    }
}

/// Why a name cannot be used for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadName {
    /// Not 1–64 characters of `A-Z a-z 0-9 _ . -`, or starts with a dot.
    Invalid,
    /// `index.md`, the directory's page.
    Reserved,
}

/// Whether `name` is a temporary one: a draft under it waits to be renamed and never
/// starts as it is. Two kinds: `build.tmp`, so `echo x > ctl/build.tmp; mv ctl/build.tmp
/// ctl/build` runs `build` however long the `mv` comes after, and a hidden name
/// (`.build.Xa3k`, see [`is_hidden`]), what editors and write tools save through.
pub fn is_temporary(name: &str) -> bool {
    name.ends_with(".tmp") || is_hidden(name.as_bytes())
}

/// Whether `name` is a hidden draft's: a dot, then 1–63 characters of
/// `A-Z a-z 0-9 _ . -` (but not `..`). An atomic save makes one beside its target
/// (`mkstemp(dir=ctl, prefix=".x")`), writes it, and renames it over the target.
pub fn is_hidden(name: &[u8]) -> bool {
    name.len() >= 2
        && name.len() <= 64
        && name[0] == b'.'
        && name != b".."
        && name[1..].iter().copied().all(is_name_byte)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// Checks a command name: 1–64 characters of `A-Z a-z 0-9 _ . -`, not starting with
/// a dot, and not the reserved `index.md`.
pub fn check_name(name: &[u8]) -> Result<&str, BadName> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name[0] != b'.'
        && name.iter().copied().all(is_name_byte);
    if !valid {
        return Err(BadName::Invalid);
    }
    let name = std::str::from_utf8(name).expect("ASCII was checked just above");
    if name == "index.md" {
        return Err(BadName::Reserved);
    }
    Ok(name)
}

/// Checks the name of a draft in `ctl/`: a command name, or a hidden one
/// ([`is_hidden`]), which never runs under that name.
pub fn check_draft_name(name: &[u8]) -> Result<&str, BadName> {
    if is_hidden(name) {
        return Ok(std::str::from_utf8(name).expect("ASCII was checked just above"));
    }
    check_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fixed_part_of_the_tree_is_fixed() {
        for ino in [ROOT_INDEX, CTL, CMD, CMD_INDEX, SKILL_MD, EVENTS] {
            assert!(is_fixed(ino), "{ino}");
        }
        for id in [0, 1, 1 << 30] {
            assert!(!is_fixed(entry_ino(id)), "{id}");
            assert!(!is_fixed(file_ino(id, Slot::Wait)), "{id}");
        }
        // A command's stderr file resolves only for the thread that opens it: never
        // kept either.
        let stderr = (0..u64::MAX.ilog2())
            .map(|bit| 1u64 << bit)
            .find(|&ino| crate::fs::stderr::stderr_job(ino).is_some())
            .expect("stderr files have inodes");
        assert!(!is_fixed(stderr));
    }

    #[test]
    fn names() {
        for good in ["a", "build", "x.tmp", "A_b-9", &"n".repeat(64)] {
            assert_eq!(check_name(good.as_bytes()), Ok(good), "{good}");
        }
        for bad in [
            "",
            ".hidden",
            "a/b",
            "a b",
            "é",
            "a\0",
            &"n".repeat(65),
            "..",
            "x*",
        ] {
            assert_eq!(check_name(bad.as_bytes()), Err(BadName::Invalid), "{bad:?}");
        }
        assert_eq!(check_name(b"index.md"), Err(BadName::Reserved));
    }

    #[test]
    fn hidden_draft_names() {
        let longest = format!(".{}", "n".repeat(63));
        for hidden in [
            ".x",
            ".xAb3_9",
            ".build.Xa3k",
            "..x",
            ".tmp",
            longest.as_str(),
        ] {
            assert!(is_hidden(hidden.as_bytes()), "{hidden}");
            assert!(is_temporary(hidden), "{hidden}");
            assert_eq!(check_draft_name(hidden.as_bytes()), Ok(hidden), "{hidden}");
            assert_eq!(
                check_name(hidden.as_bytes()),
                Err(BadName::Invalid),
                "{hidden}"
            );
        }
        let too_long = format!(".{}", "n".repeat(64));
        for bad in [".", "..", ".a b", ".a/b", ".é", too_long.as_str(), "x"] {
            assert!(!is_hidden(bad.as_bytes()), "{bad:?}");
        }
        for bad in [".", "..", ".a b", too_long.as_str(), ""] {
            assert_eq!(
                check_draft_name(bad.as_bytes()),
                Err(BadName::Invalid),
                "{bad:?}"
            );
        }
        assert_eq!(check_draft_name(b"build"), Ok("build"));
        assert_eq!(check_draft_name(b"index.md"), Err(BadName::Reserved));
        assert!(!is_temporary("build") && is_temporary("build.tmp"));
    }

    #[test]
    fn inode_numbers_round_trip() {
        assert_eq!(decode(entry_ino(7)), Some(Dynamic::Entry(7)));
        for slot in Slot::all() {
            assert_eq!(decode(file_ino(7, slot)), Some(Dynamic::File(7, slot)));
            assert_eq!(Slot::from_name(slot.name()), Some(slot));
        }
        assert_eq!(decode(SKILL_MD), None);
        assert_ne!(entry_ino(1), entry_ino(2));
    }
}
