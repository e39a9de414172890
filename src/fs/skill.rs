//! SKILL.md, the agent skill the mount serves: the whole loop an agent needs (write,
//! wait, read, kill, remove, refusals, directives, events), with this mount's path and
//! settings written in, so every command in it works when copied.

use super::pages::Site;
use crate::units::format_duration;

/// The agent skill. Every fenced `sh` block works when copied, in order, against this
/// mount; a test runs them.
pub fn skill(site: &Site) -> String {
    let m = site.mount_text();
    let placeholder = if site.mount.is_none() {
        "\nReplace `<mount>` below with the directory where terminalfs is mounted.\n"
    } else {
        ""
    };
    let wait = site.wait_timeout.as_secs();
    let keep = format_duration(site.keep);
    format!(
        "---\n\
         name: terminalfs\n\
         description: Run shell commands through files at {m}. Write a command into ctl/<name>, \
         block on cmd/<name>/wait, read stdout/stderr with tail, stop it by writing to kill. \
         Use it for long builds, tests and servers, several at once.\n\
         ---\n\n\
         # terminalfs\n\
         {placeholder}\n\
         The directory `{m}` runs shell commands. Each command has a name; you start it by \
         writing its text into `{m}/ctl/<name>` and watch it in `{m}/cmd/<name>/`. \
         Commands run as `{shell} -c <text>` in `{cwd}` (the driver's working directory \
         or its `--cwd`; `#terminalfs cwd=DIR` moves one command), with the environment \
         the driver was started with plus `TERMINALFS_NAME=<name>`, and with no standard \
         input and no terminal unless they ask for one (see \"Answer prompts, drive a REPL \
         or an editor\" below): otherwise anything that asks a question gets end-of-file. \
         `{m}/index.md` shows the shell and directory in force.\n\n\
         Two tools help: `terminalfs check --settings {settings} --cwd {cwd} 'TEXT'` prints \
         whether this mount's deny list would run a text and which rule refuses it, without \
         running anything (use it before you write something you are unsure of); `terminalfs selftest --path {m}` checks \
         that the mount works and prints one line per check.\n\n\
         ## Run and wait\n\n\
         ```sh\n\
         echo 'ls -la' > {m}/ctl/listing\n\
         cat {m}/cmd/listing/wait\n\
         cat {m}/cmd/listing/exitcode\n\
         tail -n 50 {m}/cmd/listing/stdout\n\
         while w=$(cat {m}/cmd/listing/wait) && [ \"$w\" = running ]; do :; done\n\
         echo \"$w\"\n\
         ```\n\n\
         `wait` blocks until the command stops, for at most {wait} seconds, and then prints \
         exactly one word and a newline: `completed`, `error` (a non-zero exit, a signal or a \
         kill), `running` (still going: read it again, as the loop above does) or `paused` \
         (it was still paused when the wait ran out, by a `STOP` written to `kill` or from \
         elsewhere: it will not end until `echo CONT > kill`, so the loop stops there). \
         `status` says the same words (and `denied`, for a command that never ran and has \
         no `wait`). `reason` exists only when a command was refused or stopped abnormally \
         (killed, timed out, failed to start, the driver stopped while it ran): read it \
         when `wait` says `error`.\n\n\
         Each command starts fresh: a `cd` or `export` in one does not carry over to the next. \
         Every command starts in `{cwd}` with the environment of whoever started terminalfs.\n\n\
         ```sh\n\
         echo 'cd /; export GREETING=hi' > {m}/ctl/setup\n\
         echo 'echo \"GREETING=$GREETING\"' > {m}/ctl/fresh\n\
         cat {m}/cmd/fresh/wait\n\
         cat {m}/cmd/fresh/stdout\n\
         ```\n\n\
         ## A script\n\n\
         ```sh\n\
         cat > {m}/ctl/script <<'EOF'\n\
         echo step one\n\
         echo step two >&2\n\
         EOF\n\
         cat {m}/cmd/script/wait\n\
         cat {m}/cmd/script/output\n\
         ```\n\n\
         To choose the name last, write `ctl/<name>.tmp` and rename it: a draft whose name \
         ends in `.tmp` never runs under that name, however long the rename takes, and starts \
         {settle} after it. So does a hidden one (`ctl/.x…`, a dot and 1–63 name characters): \
         a write tool's atomic save into `ctl/` (a hidden temporary file, written, then \
         renamed to `ctl/<name>`) runs the command once, as `<name>`. `mv`, `cp -p` and \
         `install` into `ctl/` work too. Any other draft starts {settle} after its writer \
         closes it, under the name it has then.\n\n\
         ```sh\n\
         echo 'echo deployed' > {m}/ctl/deploy.tmp && mv {m}/ctl/deploy.tmp {m}/ctl/deploy\n\
         cat {m}/cmd/deploy/wait\n\
         ```\n\n\
         ## Limits and how long results stay\n\n\
         Leading `#terminalfs` lines set limits for one command (the shell ignores them): \
         `timeout` stops it after that long, `memory` caps its memory, `keep` is how long it \
         stays once stopped and unread ({keep} unless set), `cwd` is the directory it starts \
         in (absolute, `~/…`, or relative to `{cwd}`; it must exist). Durations take `ms`, \
         `s`, `m`, `h` (a bare number is seconds), sizes `k`, `m`, `g`. `memory` is the \
         command's cgroup limit where the driver has the memory controller; elsewhere it \
         becomes an address-space limit, under which a JVM (it reserves far more address \
         space than it uses) and similar programs fail to start: leave `memory` out for \
         them there (`result.json`'s `memory_limit` says which kind this mount applied).\n\n\
         ```sh\n\
         cat > {m}/ctl/limited <<'EOF'\n\
         #terminalfs timeout=10m memory=4G keep=1h\n\
         echo within limits\n\
         EOF\n\
         cat {m}/cmd/limited/wait\n\
         echo '#terminalfs colour=red' > {m}/ctl/badkey || cat {m}/cmd/badkey/reason\n\
         ```\n\n\
         An unknown key, a bad value, a key given twice, a `cwd` that is no directory, or a \
         `#terminalfs` line after the first command (the shell would take it for a comment \
         and nothing would apply it; a heredoc's body is not a comment) fails the write or \
         the close with \"Invalid argument\"; nothing runs and `reason` says why. A stopped command and its output are removed \
         {keep} after its files were last open (or its `keep=`). Past the output limit per \
         stream, the first part and the newest bytes are kept, with one line in between \
         saying how many bytes were dropped.\n\n\
         `stdout` and `stderr` hold each stream; `output` holds both in the order they came. \
         All three grow while the command runs, so `tail -n`, `grep` and `wc` work on them \
         at any time.\n\n\
         ## Watch, stop and remove\n\n\
         ```sh\n\
         echo 'for i in 1 2 3; do echo tick $i; sleep 1; done; sleep 300' > {m}/ctl/ticker\n\
         head -n 3 {m}/cmd/ticker/follow\n\
         cat {m}/cmd/ticker/status\n\
         echo stop > {m}/cmd/ticker/kill\n\
         cat {m}/cmd/ticker/wait\n\
         cat {m}/cmd/ticker/reason\n\
         rm -r {m}/cmd/ticker\n\
         ```\n\n\
         - `follow` streams `output` as it arrives and ends when the command stops, or after \
         {wait} seconds of silence; `cat` exits 0 either way, so read `status` afterwards \
         to tell which. Each open starts again from the beginning of the output, \
         so opening it again repeats what you saw. For new lines only, use \
         `tail -f -n 0 {m}/cmd/<name>/output`; tail looks about once a second \
         (`-s 0.2` looks more often).\n\
         - `kill` exists while the command runs; writing `stop` stops the command and \
         everything it started: SIGTERM, then SIGKILL if it has not ended soon after. \
         `: > kill` and `echo > kill` (nothing, or only blank lines) do the same, and so does \
         a word that names no signal (see Signals): `reason` then names the word, as in \
         `killed: a write to its kill file ('frob' is no signal name) stopped it`, and so \
         does the driver's log.\n\
         - `rm -r {m}/cmd/<name>` stops the command if needed and frees the name. A stopped \
         command also goes away by itself {keep} after its files were last open.\n\
         - A command is over when its shell exits. One that starts something in the \
         background (`server &`) shows `completed` at once while what it started keeps \
         running and writing to `output`; `rm -r {m}/cmd/<name>` stops what it left running. \
         To watch it as one command, end the text with `wait`.\n\
         - `cat {m}/cmd/index.md` lists every command with its status (`starting` until \
         its process exists); `result.json` holds \
         exit code, times, memory, byte counts, and the shell and directory it ran with.\n\n\
         ## Signals\n\n\
         Write a signal's name or number to `kill` to send just that signal to the command \
         and everything it started. Names go in any case, with or without `SIG`: `INT`, \
         `int`, `SigInt` and `2` are all Ctrl-C; `HUP`, `QUIT`, `TERM`, `KILL`, `USR1`, \
         `USR2`, `ALRM`, `WINCH`, `CONT` and every other signal the system has work the same \
         way, and so does any signal number (on Linux the real-time ones too, such as `34` \
         or `RTMIN+2`), each also after a dash, as in `kill -9` (`-9`, `-INT`), or after \
         kill's option on the same line (`-s INT`, `-n 9`, `--signal INT`). `STOP` in capitals (or `SIGSTOP`) pauses it (`status` says \
         `paused`; `wait` keeps waiting, then answers `paused` when its wait runs out) until \
         `CONT`; `stop` alone in any other case is \
         the stop above, but after a dash or kill's option (`-stop`, `-s stop`) it names \
         SIGSTOP and pauses. A stop or continue from elsewhere \
         (`kill -STOP <pid>`, the command stopping itself) shows within a quarter second. If the command dies of a signal \
         written there, `reason` names it and `result.json` says `\"killed\": true`. Writing to `kill` of a \
         command that has stopped does nothing. A shell that is just starting a program \
         can lose a signal that comes meanwhile (dash catches `INT` until its child runs): \
         start the program with `exec`, as below, or send the signal again if `wait` still \
         says `running`.\n\n\
         A word that names no signal (`frob`, `INTT`, `0`) is not refused: like any write \
         to `kill` that names no signal, it stops the command, and `reason` and the log name \
         the word. Check the spelling before you write.\n\n\
         ```sh\n\
         echo 'exec sleep 300' > {m}/ctl/nap\n\
         echo STOP > {m}/cmd/nap/kill\n\
         cat {m}/cmd/nap/status\n\
         echo CONT > {m}/cmd/nap/kill\n\
         echo int > {m}/cmd/nap/kill\n\
         cat {m}/cmd/nap/wait\n\
         ```\n\n\
         Several lines in one write (`printf 'INT\\nKILL\\n'`) are sent at once, in the order \
         written, with no pause between them (blank lines are skipped): the KILL lands before \
         an INT handler has had a chance to run, and signals that arrive together reach the \
         program in the order the kernel picks, not the order written. One write names at \
         most 16 signals: a write naming more fails with EINVAL and sends none of them. \
         To escalate, send \
         one, give it time, then send the next; or write `stop`, which sends TERM and waits \
         before the KILL by itself.\n\n\
         ```sh\n\
         echo 'exec sleep 300' > {m}/ctl/calm\n\
         echo INT > {m}/cmd/calm/kill\n\
         for i in $(seq 50); do [ \"$(cat {m}/cmd/calm/status)\" = running ] || break; sleep 0.1; done\n\
         [ \"$(cat {m}/cmd/calm/status)\" != running ] || echo KILL > {m}/cmd/calm/kill\n\
         cat {m}/cmd/calm/wait\n\
         ```\n\n\
         ## Wait for the first of several\n\n\
         `{m}/events` has one line per change of any command: `<time> <name> <word>`, with \
         the words `running`, `paused`, `completed <code>`, `error <code>`, `denied` and \
         `removed` (a bare `error` for a command whose end no driver saw, one that ran when \
         the driver crashed: its `reason` says so, and it has no exit code). Each open first lists every command as it is now, then waits for changes, \
         and ends after {wait} seconds of silence, or {wait} seconds after it began even on a \
         busy mount (so `grep -r` over the mount ends; `tail -f` goes on past that end), so \
         wait in a loop. A reader that only polls the size (`fstat`) without reading sees \
         it stop growing once 256 KiB of lines wait unread; its next read goes on with one \
         line per change since, and nothing already made is dropped. A program that reads \
         to the end before it prints (`wc`, a `tail -n +1 -f` whose output is piped, \
         `head` until it has its lines) shows nothing until the feed ends; `grep -m1` and `tail -f` print as lines \
         come:\n\n\
         ```sh\n\
         echo 'sleep 2; echo fast' > {m}/ctl/fast\n\
         echo 'sleep 300' > {m}/ctl/slow\n\
         until grep -m1 -E '^[^ ]+ (fast|slow) (completed|error)' {m}/events; do :; done\n\
         echo stop > {m}/cmd/slow/kill\n\
         ```\n\n\
         ## Answer prompts, drive a REPL or an editor\n\n\
         A first line `#terminalfs stdin` gives the command a standard input: while it runs, \
         every write to `cmd/<name>/stdin` reaches it, in order; `rm cmd/<name>/stdin` closes \
         it (end of file). The answer comes when the program writes it, a moment after your \
         write returns: wait for what you expect.\n\n\
         ```sh\n\
         printf '#terminalfs stdin\\npython3 -i -q\\n' > {m}/ctl/py\n\
         echo 'print(6*7)' >> {m}/cmd/py/stdin\n\
         for i in $(seq 100); do grep -q 42 {m}/cmd/py/stdout && break; sleep 0.1; done\n\
         cat {m}/cmd/py/stdout\n\
         rm {m}/cmd/py/stdin\n\
         ```\n\n\
         `#terminalfs tty` (or `tty=COLSxROWS`, 120x40 by default) runs it on a terminal \
         instead, for programs that draw a screen or insist on one (editors, pagers, password \
         prompts). Then `cmd/<name>/screen` is what the terminal shows now, as plain text, and \
         `cmd/<name>/keys` takes key names as tmux's send-keys spells them: `Enter`, `Tab`, \
         `Escape`, `BSpace`, `Up`, `Down`, `Left`, `Right`, `Home`, `End`, `PageUp`, \
         `PageDown`, `F1`…`F12`, `C-c`, `C-d`, `M-x`, one character as itself, and 'quoted \
         text' sent as it is. Read `screen` before you type: keys sent before a program is \
         ready may be lost, as on any terminal.\n\n\
         ```sh\n\
         printf '#terminalfs tty=80x24\\nvi notes.txt\\n' > {m}/ctl/edit\n\
         for i in $(seq 100); do grep -q notes.txt {m}/cmd/edit/screen && break; sleep 0.1; done\n\
         cat {m}/cmd/edit/screen\n\
         echo \"i 'first line' Escape : w q Enter\" > {m}/cmd/edit/keys\n\
         cat {m}/cmd/edit/wait\n\
         ```\n\n\
         - An unknown key name fails the whole write with \"Invalid argument\" and sends \
         nothing. `stdin` also works on a terminal, for raw bytes; `rm stdin` there only \
         removes the file (a terminal has no end of file: send `C-d` to `keys`).\n\
         - `C-c` interrupts the program's whole process group, the shell around it included; \
         start it with `exec` (`exec python3 -i`) to keep the shell out of the way.\n\
         - Writes to a shell's `stdin` are checked by the deny list as one script; a refused \
         write fails with \"Operation not permitted\" and is not delivered, and so does \
         every later write through the same open file. Being one script, a shell's input \
         is at most 1 MiB (1048576 bytes) in all: past that every write fails with \"File \
         too large\"; start a new command for more. `{m}/ctl/index.md` lists such \
         refusals (as `<name>/stdin`) with their reasons. A program only known when it runs \
         (`$SHELL`, `$(which bash)`, `/proc/self/exe`), one that starts a shell when given \
         no command (`su`, `script`), `xargs sh -c`, `parallel` and `source /dev/stdin` count \
         as a shell. A shell on a terminal is refused while any rule is in force.\n\
         - A write delivers what fits and returns that count (a short write: `cat`, `dd` and \
         shells write the rest). A write that finds the input full waits about a second, \
         then is taken whole if it is 4 KiB or less, else returns a count of 1 (what is \
         taken is delivered, in order) and the next write waits again, so `rm` of the \
         file is never kept waiting long. Once the command \
         has taken nothing for {wait} seconds, a write fails with \"Resource temporarily \
         unavailable\", having delivered nothing of itself; a write after the command \
         stopped, or after `rm` of `stdin`, fails with \"Broken pipe\".\n\n\
         ## Other machines\n\n\
         `#terminalfs host=NAME` runs a command on a host of the settings' `hosts` table \
         (ssh, `kubectl exec` or `srun`; `/index.md` lists them and whether each is reachable \
         now). The files, `kill` words, `timeout=`, `stdin` and `tty` work as here; `stdout` \
         and `stderr` come apart, so `output` keeps each stream's order, not the order \
         between them. An unknown name is refused; a host that cannot be reached ends the \
         command as `error` with ssh's words in `reason`.\n\n\
         ## When a write is refused\n\n\
         A write to `ctl/<name>` that fails with \"Operation not permitted\" was refused by \
         the deny list. The command did not run; `{m}/cmd/<name>/reason` names the rule, \
         and `terminalfs check 'TEXT'` shows how the list reads a text. A relative path given to `rm`, `chmod`, \
         `chown` or `chgrp` is judged as the path it names from where the command runs: \
         `cd / && rm -rf *` is `rm -rf /*`, and `reason` says what it was judged as. An \
         alias or a `hash -p` name is judged as what it stands for (an alias ending in a \
         blank or `;` is refused when words follow it; namerefs and `BASH_CMDS` or \
         `BASH_ALIASES` changed other than by `NAME[key]=` are refused), and a value assigned \
         with `$( )` or backquotes in it as if it ran (bash runs it when the variable is \
         used as a number): keep such text out of variables. Do not \
         try to get around the rule: ask the user. \"File exists\" means the name is taken: pick another, or `rm -r` the old \
         `cmd/<name>` first. \"Invalid argument\" means the name is not allowed, or a \
         `#terminalfs` line is wrong (then `cmd/<name>/reason` says which). Every refusal, \
         with its reason, is listed under \"Refused lately\" in `{m}/ctl/index.md` and is a \
         line of the driver's log.\n\n\
         ## In a sandbox\n\n\
         When `{m}/index.md` says `sandbox: on`, every command runs in a kernel sandbox: \
         it reads anywhere except the paths listed as unreadable; it writes only below \
         its working directory, its own `$TMPDIR` (private, kept until the command is \
         removed), the `allowWrite` paths, its stdout, stderr and terminal, `/dev/null` \
         and `/dev/shm`; never `.git/hooks`, shell startup files, `~/.ssh`, the settings \
         or this mount. With no allowed domains it has no network at all; with some, \
         HTTP and HTTPS to those names go through a proxy set in `http_proxy`. A refusal \
         is the program's own error: \"Permission denied\" or \"Read-only file \
         system\" for a write, \"Permission denied\" or a failed connect for a \
         socket, an HTTP 403 from the proxy whose body names the host. \
         `cmd/<name>/result.json` says under `sandbox` what was writable, and counts \
         `connections_refused`. Work inside the working directory or `$TMPDIR`; do not \
         try to get around the sandbox: ask the user to change the settings.\n\n\
         ## Rules of thumb\n\n\
         - A name is 1–64 characters of `A-Z a-z 0-9 _ . -` and runs once; pick a new name \
         for each run.\n\
         - Prefer `cat cmd/<name>/wait` over sleeping and polling.\n\
         - Read output with `tail -n` or `grep`; a large output keeps its first part, then a \
         line saying how many bytes were dropped, then the newest bytes. A file held open \
         while bytes it had not read yet were dropped (`tail -f`, `follow`) shows such a \
         line where they were.\n",
        shell = site.shell.display(),
        cwd = site.cwd.display(),
        settings = site.settings.display(),
        settle = format_duration(site.settle),
    )
}
