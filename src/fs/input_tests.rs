//! Writes to `stdin` and `keys` through the tree without a mount: a fake spawner hands
//! each `#terminalfs stdin` command a real pipe whose other end the test reads.

use super::names;
use super::tests::{errno, Rig};
use super::*;
use std::os::fd::AsRawFd;

const W: OpenMode = OpenMode {
    write: true,
    append: true,
};

impl Rig {
    /// Everything written to `name`'s stdin pipe so far.
    fn given(&self, name: &str) -> String {
        let stdin = self.fake.stdin.lock();
        let (_, read) = stdin
            .iter()
            .find(|(command, _)| command == name)
            .unwrap_or_else(|| panic!("{name} has no stdin pipe"));
        let mut out = Vec::new();
        let mut buffer = [0u8; 65536];
        loop {
            // SAFETY: reading into a valid buffer from a non-blocking pipe.
            let n = unsafe { libc::read(read.as_raw_fd(), buffer.as_mut_ptr().cast(), 65536) };
            if n <= 0 {
                return String::from_utf8_lossy(&out).into_owned();
            }
            out.extend_from_slice(&buffer[..n as usize]);
        }
    }

    /// `echo -n text >> cmd/<name>/<file>`: open, write, close.
    fn append_to(&self, dir: u64, file: &str, text: &str) -> FsResult<Write> {
        let ino = self.found(dir, file)?.ino;
        let fh = self.tree.open(ino, W)?.fh;
        let written = self.tree.write(fh, 0, text.as_bytes());
        self.tree.release(fh);
        written
    }
}

fn done(result: FsResult<Write>) -> u32 {
    match result.expect("the write is taken") {
        Write::Done(n) => n,
        Write::Pending { .. } => panic!("the write waits"),
    }
}

#[test]
fn writes_reach_the_pipe_in_order_and_rm_closes_it_without_pinning() {
    let rig = Rig::with(
        std::time::Duration::from_secs(3600),
        std::time::Duration::ZERO,
    );
    let dir = rig.run("cat", "#terminalfs stdin\ncat");
    assert!(rig.ls(dir).contains(&"stdin".to_string()));
    assert!(!rig.ls(dir).contains(&"keys".to_string()));
    assert_eq!(done(rig.append_to(dir, "stdin", "one\n")), 4);
    assert_eq!(done(rig.append_to(dir, "stdin", "two\n")), 4);
    assert_eq!(rig.given("cat"), "one\ntwo\n");
    rig.tree.unlink(dir, b"stdin").expect("stdin removed");
    assert!(!rig.ls(dir).contains(&"stdin".to_string()));
    // Removing stdin is no removal of a view: the command still expires.
    rig.fake.finish("cat", 0);
    rig.tree.tick();
    assert_eq!(errno(rig.found(names::CMD, "cat")), libc::ENOENT);
}

#[test]
fn a_full_pipe_makes_the_write_wait_and_nothing_is_lost() {
    let rig = Rig::new();
    let dir = rig.run("slow", "#terminalfs stdin\nsleep 100");
    let ino = rig.found(dir, "stdin").expect("stdin").ino;
    let fh = rig.tree.open(ino, W).expect("open").fh;
    let chunk = "x".repeat(4096);
    let mut taken = 0;
    let pending = loop {
        match rig.tree.write(fh, 0, chunk.as_bytes()).expect("no error") {
            Write::Done(n) => taken += n as usize,
            Write::Pending { job } => break job,
        }
    };
    assert_eq!(pending, rig.fake.job("slow").id());
    // Held as long as the adapter holds a write, it is answered in part: one byte of
    // a write longer than a pipe takes whole, which goes in after what the pipe holds.
    let long = format!("y{chunk}");
    assert_eq!(rig.tree.write_held(fh, long.as_bytes()), Ok(1));
    assert_eq!(rig.given("slow").len(), taken);
    // The command read: the byte, then the same write, go through now.
    assert_eq!(done(rig.tree.write(fh, 0, chunk.as_bytes())), 4096);
    assert_eq!(rig.given("slow"), format!("y{chunk}"));
    rig.tree.release(fh);
}

#[test]
fn a_shell_is_given_only_what_passes_as_one_script() {
    let rig = Rig::new();
    let dir = rig.run("sh", "#terminalfs stdin\nsh");
    done(rig.append_to(dir, "stdin", "echo 'a\n"));
    assert_eq!(
        errno(rig.append_to(dir, "stdin", "'; sudo id\n")),
        libc::EPERM
    );
    done(rig.append_to(dir, "stdin", "'\n"));
    assert_eq!(rig.given("sh"), "echo 'a\n'\n");
    // Another program's input is not checked.
    let dir = rig.run("py", "#terminalfs stdin\npython3 -i");
    done(rig.append_to(dir, "stdin", "import os; os.system('sudo id')\n"));
}

#[test]
fn a_refused_write_refuses_every_later_write_through_its_handle() {
    let rig = Rig::new();
    let dir = rig.run("sh", "#terminalfs stdin\nsh");
    let ino = rig.found(dir, "stdin").expect("stdin").ino;
    let fh = rig.tree.open(ino, W).expect("open").fh;
    // A text written line by line: once its first line is refused, the rest is too.
    let lines = ["cat <<X | sudo sh\n", "echo body\n", "X\n"];
    for line in lines {
        assert_eq!(
            errno(rig.tree.write(fh, 0, line.as_bytes())),
            libc::EPERM,
            "{line:?}"
        );
    }
    rig.tree.release(fh);
    assert_eq!(rig.given("sh"), "");
    // The refused text is not part of the script: another open is checked with what
    // the shell was given.
    done(rig.append_to(dir, "stdin", "echo fine\n"));
    assert_eq!(rig.given("sh"), "echo fine\n");
}

#[test]
fn input_files_say_why_they_are_missing() {
    let rig = Rig::new();
    let plain = rig.run("plain", "sleep 100");
    let create = |dir: u64, file: &str| rig.tree.create(dir, file.as_bytes(), W);
    assert_eq!(errno(create(plain, "stdin")), libc::EACCES);
    assert_eq!(errno(create(plain, "keys")), libc::ENOTTY);
    // Only a command that has a stdin is pointed to it.
    let why =
        |result: FsResult<(Attr, super::types::Opened)>| result.err().unwrap().reason.into_owned();
    let no_stdin = why(create(plain, "keys"));
    assert!(!no_stdin.contains("stdin"), "{no_stdin}");
    let piped = rig.run("piped", "#terminalfs stdin\ncat");
    assert_eq!(errno(create(piped, "keys")), libc::ENOTTY);
    let to_stdin = why(create(piped, "keys"));
    assert!(to_stdin.contains("write raw input to stdin"), "{to_stdin}");
    rig.fake.finish("piped", 0);
    assert!(!rig.ls(piped).contains(&"stdin".to_string()));
    assert_eq!(errno(create(piped, "stdin")), libc::EPIPE);
}

#[test]
fn a_shell_on_a_terminal_is_refused_while_rules_are_in_force() {
    let rig = Rig::new();
    // The close fails, as for any other refusal.
    assert_eq!(
        errno(rig.submit("bash", "#terminalfs tty\nbash")),
        libc::EPERM
    );
    assert_eq!(rig.read("bash", "status"), "denied\n");
    assert!(rig.read("bash", "reason").contains("cannot be checked"));
    assert_eq!(rig.fake.spawns(), 0);
    // A write is refused only when no more text can make it something else.
    let fh = rig.create("c").expect("created");
    rig.write(fh, 0, "#terminalfs tty\nbash -c ")
        .expect("not judged yet");
    rig.write(fh, 0, "'echo hi'\n")
        .expect("no shell reads the terminal");
    rig.tree.flush(fh).expect("accepted");
    rig.tree.release(fh);
    assert_ne!(rig.read("c", "status"), "denied\n");
}

#[test]
fn a_shell_is_given_its_end_of_file_only_when_what_it_holds_passes() {
    let rig = Rig::new();
    let dir = rig.run("sh", "#terminalfs stdin\nsh");
    done(rig.append_to(dir, "stdin", "echo fine\n"));
    // A write taken in part leaves the shell the beginning of a line, which was never
    // checked by itself: `sudo -i` of a write `sudo -id` passed for, say.
    {
        let mut state = rig.tree.state.lock();
        let id = state.cmd["sh"];
        let Some(Entry::Command(command)) = state.entries.get_mut(&id) else {
            panic!("sh is a command");
        };
        let script = command.script.as_ref().expect("a shell's input is checked");
        script.lock().extend_from_slice(b"sudo -i");
    }
    // At end of file the shell would run it: stdin stays open.
    let refused = rig.tree.unlink(dir, b"stdin").expect_err("not closed");
    assert_eq!(refused.errno, libc::EPERM);
    assert!(refused.reason.contains("not closed"), "{}", refused.reason);
    assert!(rig.ls(dir).contains(&"stdin".to_string()));
    // What passes as a whole closes as before.
    let dir = rig.run("ok", "#terminalfs stdin\nsh");
    done(rig.append_to(dir, "stdin", "echo fine"));
    rig.tree.unlink(dir, b"stdin").expect("closed");
    assert!(!rig.ls(dir).contains(&"stdin".to_string()));
}
