//! The wrapper table: every program that runs another one (`nohup`, `env`, `sudo`, `timeout`,
//! ...), the options of each that take a value, and where the program it runs starts.

/// What a wrapper does with the words after its options.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// The words are a command and its arguments.
    Command,
    /// The words are joined into one string that a shell runs (`watch`, `sg`).
    Joined,
    /// The words are the arguments of a shell (`su user -c X`: `-c X` goes to the shell).
    ShellArguments,
    /// Nothing: only the value of its command option runs (`script -c X`).
    Nothing,
    /// The value of its program option, with the words after its options as arguments
    /// (`start-stop-daemon --start --exec PROG -- ARGS`).
    ProgramOption,
    /// The words after a marker word (`gdb ... --args PROG ARGS`).
    AfterMarker(&'static [&'static str]),
    /// Each word is a string a shell runs (`hyperfine CMD1 CMD2`).
    EachScript,
    /// The words are a shell's arguments (`capsh -- -c TEXT`).
    ShellWords,
}

/// How one wrapper reads its own options.
pub(crate) struct Wrapper {
    pub(crate) names: &'static [&'static str],
    /// When not empty, the wrapper runs a command only under these subcommands, the word
    /// after its name (`pyenv exec`, `tmux new-session`); other subcommands run nothing.
    pub(crate) subcommands: &'static [&'static str],
    /// Short options that take a value (attached, or as the next word).
    pub(crate) short_value: &'static [u8],
    /// Short options whose value can only be attached (`xargs -i`, `-e`).
    pub(crate) short_optional: &'static [u8],
    /// Long options followed by that many values when not given `--name=value`.
    pub(crate) long_values: &'static [(&'static str, usize)],
    /// Words before the command that are not options (the duration of `timeout`).
    pub(crate) operands: usize,
    /// Words before the options that are not options (the architecture of `setarch`):
    /// as many as there are, up to this count, before the first word starting with `-`.
    pub(crate) leading_operands: usize,
    /// Whether `NAME=value` words may follow the options (`env`, `sudo`).
    pub(crate) assignments: bool,
    /// An option whose value is a shell string that is run (`su -c`, `flock -c`).
    pub(crate) command_short: Option<u8>,
    pub(crate) command_long: Option<&'static str>,
    /// Options whose value is the program run ([`Runs::ProgramOption`]), the last of
    /// them given winning: `start-stop-daemon` runs `--startas` when given, else `--exec`.
    pub(crate) program_short: &'static [u8],
    pub(crate) program_long: &'static [&'static str],
    pub(crate) runs: Runs,
}

pub(crate) const PLAIN: Wrapper = Wrapper {
    names: &[],
    subcommands: &[],
    short_value: b"",
    short_optional: b"",
    long_values: &[],
    operands: 0,
    leading_operands: 0,
    assignments: false,
    command_short: None,
    command_long: None,
    program_short: b"",
    program_long: &[],
    runs: Runs::Command,
};

/// Every program known to run the command it is given, with its options.
pub(crate) const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        names: &["env"],
        short_value: b"uCSPa",
        long_values: &[("unset", 1), ("chdir", 1), ("split-string", 1)],
        assignments: true,
        ..PLAIN
    },
    Wrapper {
        names: &["command", "builtin", "nohup", "fakeroot-tcp"],
        ..PLAIN
    },
    Wrapper {
        names: &["setsid"],
        ..PLAIN
    },
    Wrapper {
        names: &["exec"],
        short_value: b"a",
        ..PLAIN
    },
    Wrapper {
        names: &["nice"],
        short_value: b"n",
        long_values: &[("adjustment", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["timeout"],
        short_value: b"sk",
        long_values: &[("signal", 1), ("kill-after", 1)],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["time"],
        short_value: b"fo",
        long_values: &[("format", 1), ("output", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["stdbuf"],
        short_value: b"oei",
        long_values: &[("output", 1), ("error", 1), ("input", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["xargs"],
        short_value: b"adEILnPs",
        short_optional: b"eil",
        long_values: &[
            ("arg-file", 1),
            ("delimiter", 1),
            ("max-args", 1),
            ("max-procs", 1),
            ("max-chars", 1),
            ("process-slot-var", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["ionice"],
        short_value: b"cnpPu",
        long_values: &[("class", 1), ("classdata", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["taskset"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["sudo"],
        short_value: b"CDghpRrTtUu",
        long_values: &[
            ("close-from", 1),
            ("chdir", 1),
            ("group", 1),
            ("host", 1),
            ("prompt", 1),
            ("chroot", 1),
            ("role", 1),
            ("command-timeout", 1),
            ("type", 1),
            ("other-user", 1),
            ("user", 1),
        ],
        assignments: true,
        ..PLAIN
    },
    Wrapper {
        names: &["doas"],
        short_value: b"uC",
        ..PLAIN
    },
    Wrapper {
        names: &["flock"],
        short_value: b"wE",
        long_values: &[("timeout", 1), ("wait", 1), ("conflict-exit-code", 1)],
        operands: 1,
        command_short: Some(b'c'),
        command_long: Some("command"),
        ..PLAIN
    },
    Wrapper {
        names: &["chroot"],
        long_values: &[("userspec", 1), ("groups", 1)],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["unshare"],
        short_value: b"SGRw",
        long_values: &[
            ("setuid", 1),
            ("setgid", 1),
            ("root", 1),
            ("wd", 1),
            ("propagation", 1),
            ("setgroups", 1),
            ("map-user", 1),
            ("map-group", 1),
            ("map-users", 1),
            ("map-groups", 1),
            ("monotonic", 1),
            ("boottime", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["nsenter"],
        short_value: b"tSG",
        long_values: &[("target", 1), ("setuid", 1), ("setgid", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["runuser", "su"],
        short_value: b"ugGsw",
        long_values: &[
            ("user", 1),
            ("group", 1),
            ("supp-group", 1),
            ("shell", 1),
            ("whitelist-environment", 1),
        ],
        command_short: Some(b'c'),
        command_long: Some("command"),
        runs: Runs::ShellArguments,
        ..PLAIN
    },
    Wrapper {
        names: &["sg"],
        leading_operands: 1,
        command_short: Some(b'c'),
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["setpriv"],
        long_values: &[
            ("reuid", 1),
            ("regid", 1),
            ("ruid", 1),
            ("rgid", 1),
            ("euid", 1),
            ("egid", 1),
            ("groups", 1),
            ("inh-caps", 1),
            ("ambient-caps", 1),
            ("bounding-set", 1),
            ("securebits", 1),
            ("pdeathsig", 1),
            ("selinux-label", 1),
            ("apparmor-profile", 1),
            ("landlock-access", 1),
            ("landlock-rule", 1),
            ("seccomp-filter", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["prlimit"],
        short_value: b"po",
        long_values: &[("pid", 1), ("output", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["chrt"],
        short_value: b"TPD",
        long_values: &[
            ("sched-runtime", 1),
            ("sched-period", 1),
            ("sched-deadline", 1),
        ],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["numactl"],
        short_value: b"imNCpPwbu",
        long_values: &[
            ("interleave", 1),
            ("weighted-interleave", 1),
            ("membind", 1),
            ("cpunodebind", 1),
            ("physcpubind", 1),
            ("preferred", 1),
            ("preferred-many", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["script"],
        short_value: b"cEIOBTm",
        long_values: &[
            ("echo", 1),
            ("log-in", 1),
            ("log-out", 1),
            ("log-io", 1),
            ("log-timing", 1),
            ("logging-format", 1),
            ("output-limit", 1),
        ],
        command_short: Some(b'c'),
        command_long: Some("command"),
        runs: Runs::Nothing,
        ..PLAIN
    },
    Wrapper {
        names: &["strace"],
        short_value: b"abeEIoOpPsSuUX",
        long_values: &[
            ("expr", 1),
            ("output", 1),
            ("attach", 1),
            ("user", 1),
            ("env", 1),
            ("string-limit", 1),
            ("trace", 1),
            ("signal", 1),
            ("status", 1),
            ("trace-path", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["ltrace"],
        short_value: b"aAeDFlnopsuwxX",
        long_values: &[("output", 1), ("library", 1), ("indent", 1), ("align", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["watch"],
        short_value: b"nq",
        long_values: &[("interval", 1), ("equexit", 1)],
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["parallel", "sem"],
        short_value: b"jSlNLnkmIEdCaP",
        long_values: &[
            ("jobs", 1),
            ("sshlogin", 1),
            ("joblog", 1),
            ("delay", 1),
            ("timeout", 1),
            ("arg-file", 1),
            ("max-args", 1),
            ("colsep", 1),
            ("results", 1),
            ("tmpdir", 1),
            ("workdir", 1),
            ("id", 1),
        ],
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["fakeroot"],
        short_value: b"lsib",
        long_values: &[("lib", 1), ("faked", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["firejail"],
        ..PLAIN
    },
    Wrapper {
        names: &["bwrap"],
        long_values: &[
            ("args", 1),
            ("argv0", 1),
            ("userns", 1),
            ("userns2", 1),
            ("pidns", 1),
            ("uid", 1),
            ("gid", 1),
            ("hostname", 1),
            ("chdir", 1),
            ("unsetenv", 1),
            ("lock-file", 1),
            ("sync-fd", 1),
            ("remount-ro", 1),
            ("exec-label", 1),
            ("file-label", 1),
            ("proc", 1),
            ("dev", 1),
            ("tmpfs", 1),
            ("mqueue", 1),
            ("dir", 1),
            ("seccomp", 1),
            ("add-seccomp-fd", 1),
            ("block-fd", 1),
            ("userns-block-fd", 1),
            ("info-fd", 1),
            ("json-status-fd", 1),
            ("cap-add", 1),
            ("cap-drop", 1),
            ("perms", 1),
            ("size", 1),
            ("overlay-src", 1),
            ("setenv", 2),
            ("bind", 2),
            ("bind-try", 2),
            ("dev-bind", 2),
            ("dev-bind-try", 2),
            ("ro-bind", 2),
            ("ro-bind-try", 2),
            ("bind-fd", 2),
            ("ro-bind-fd", 2),
            ("file", 2),
            ("bind-data", 2),
            ("ro-bind-data", 2),
            ("symlink", 2),
            ("chmod", 2),
            ("tmp-overlay", 2),
            ("ro-overlay", 2),
            ("overlay", 3),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["systemd-run"],
        short_value: b"upEMH",
        long_values: &[
            ("unit", 1),
            ("property", 1),
            ("description", 1),
            ("slice", 1),
            ("uid", 1),
            ("gid", 1),
            ("nice", 1),
            ("setenv", 1),
            ("machine", 1),
            ("host", 1),
            ("working-directory", 1),
            ("service-type", 1),
            ("on-active", 1),
            ("on-boot", 1),
            ("on-startup", 1),
            ("on-unit-active", 1),
            ("on-unit-inactive", 1),
            ("on-calendar", 1),
            ("timer-property", 1),
            ("path-property", 1),
            ("socket-property", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["setarch"],
        leading_operands: 1,
        ..PLAIN
    },
    Wrapper {
        // setarch under the names of an architecture, which take no architecture operand.
        names: &[
            "linux32", "linux64", "i386", "i486", "i586", "i686", "athlon", "x86_64", "uname26",
        ],
        ..PLAIN
    },
    Wrapper {
        // The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2 PROG`); every
        // `ld-linux*.so*`, `ld-musl*.so*`, `ld64.so*` and `ld.so` is read as `ld.so`.
        names: &["ld.so"],
        long_values: &[
            ("library-path", 1),
            ("inhibit-rpath", 1),
            ("audit", 1),
            ("preload", 1),
            ("argv0", 1),
            ("glibc-hwcaps-prepend", 1),
            ("glibc-hwcaps-mask", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["logsave"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["ssh-agent"],
        short_value: b"aEOPt",
        ..PLAIN
    },
    Wrapper {
        names: &["systemd-inhibit"],
        long_values: &[("what", 1), ("who", 1), ("why", 1), ("mode", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["systemd-cat"],
        short_value: b"tp",
        long_values: &[
            ("identifier", 1),
            ("priority", 1),
            ("stderr-priority", 1),
            ("level-prefix", 1),
            ("namespace", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["dbus-run-session"],
        long_values: &[("dbus-daemon", 1), ("config-file", 1)],
        ..PLAIN
    },
    Wrapper {
        // Options are only ever `--name=value`.
        names: &["eatmydata", "unbuffer", "valgrind", "pgrphack"],
        ..PLAIN
    },
    Wrapper {
        names: &["xvfb-run"],
        short_value: b"efnpsw",
        long_values: &[
            ("error-file", 1),
            ("auth-file", 1),
            ("server-num", 1),
            ("xauth-protocol", 1),
            ("server-args", 1),
            ("wait", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["tini"],
        short_value: b"pe",
        ..PLAIN
    },
    Wrapper {
        names: &["dumb-init"],
        short_value: b"r",
        long_values: &[("rewrite", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["chpst"],
        short_value: b"uUbe/Cnlmdopfcrt",
        ..PLAIN
    },
    Wrapper {
        names: &["softlimit"],
        short_value: b"acdflmoprst",
        ..PLAIN
    },
    Wrapper {
        names: &["setuidgid", "envuidgid", "envdir"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["setlock"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["cgexec"],
        short_value: b"g",
        ..PLAIN
    },
    Wrapper {
        names: &["faketime"],
        short_value: b"p",
        long_values: &[("date-prog", 1)],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["start-stop-daemon"],
        short_value: b"pxnugcsardNPIkOR",
        long_values: &[
            ("pid", 1),
            ("ppid", 1),
            ("pidfile", 1),
            ("exec", 1),
            ("name", 1),
            ("user", 1),
            ("group", 1),
            ("chuid", 1),
            ("signal", 1),
            ("startas", 1),
            ("chroot", 1),
            ("chdir", 1),
            ("nicelevel", 1),
            ("procsched", 1),
            ("iosched", 1),
            ("umask", 1),
            ("notify-timeout", 1),
            ("output", 1),
            ("retry", 1),
        ],
        program_short: b"xa",
        program_long: &["exec", "startas"],
        runs: Runs::ProgramOption,
        ..PLAIN
    },
    Wrapper {
        names: &["gdb", "gdb-multiarch"],
        runs: Runs::AfterMarker(&["--args", "-args"]),
        ..PLAIN
    },
    // Launchers read from each program's documented way of running a command.
    Wrapper {
        names: &["capsh"],
        runs: Runs::ShellWords,
        ..PLAIN
    },
    Wrapper {
        names: &["perf"],
        subcommands: &["stat", "record", "trace"],
        short_value: b"eGpPtoxrICDMjFcSmLT",
        long_values: &[
            ("event", 1),
            ("pid", 1),
            ("tid", 1),
            ("cpu", 1),
            ("output", 1),
            ("repeat", 1),
            ("field-separator", 1),
            ("cgroup", 1),
            ("metrics", 1),
            ("freq", 1),
            ("count", 1),
            ("call-graph", 1),
            ("delay", 1),
            ("interval-print", 1),
            ("mmap-pages", 1),
            ("filter", 1),
            ("duration", 1),
            ("expr", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["hyperfine"],
        short_value: b"wmMrspcPDLSuno",
        long_values: &[
            ("warmup", 1),
            ("min-runs", 1),
            ("max-runs", 1),
            ("runs", 1),
            ("setup", 1),
            ("prepare", 1),
            ("conclude", 1),
            ("cleanup", 1),
            ("parameter-scan", 3),
            ("parameter-step-size", 1),
            ("parameter-list", 2),
            ("shell", 1),
            ("style", 1),
            ("time-unit", 1),
            ("export-asciidoc", 1),
            ("export-csv", 1),
            ("export-json", 1),
            ("export-markdown", 1),
            ("export-orgmode", 1),
            ("command-name", 1),
            ("output", 1),
            ("input", 1),
            ("sort", 1),
        ],
        runs: Runs::EachScript,
        ..PLAIN
    },
    Wrapper {
        names: &["pyenv", "rbenv", "nodenv", "asdf", "bundle", "pnpm", "yarn"],
        subcommands: &["exec", "dlx"],
        ..PLAIN
    },
    Wrapper {
        names: &["mise", "rtx"],
        subcommands: &["exec", "x"],
        short_value: b"Cj",
        long_values: &[("cd", 1), ("jobs", 1), ("env", 1)],
        command_short: Some(b'c'),
        command_long: Some("command"),
        ..PLAIN
    },
    Wrapper {
        names: &["direnv"],
        subcommands: &["exec"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["npx"],
        short_value: b"p",
        long_values: &[("package", 1)],
        command_short: Some(b'c'),
        command_long: Some("call"),
        ..PLAIN
    },
    Wrapper {
        names: &["npm"],
        subcommands: &["exec", "x"],
        short_value: b"pw",
        long_values: &[("package", 1), ("workspace", 1)],
        command_short: Some(b'c'),
        command_long: Some("call"),
        ..PLAIN
    },
    Wrapper {
        names: &["tmux"],
        subcommands: &[
            "new",
            "new-session",
            "new-window",
            "neww",
            "split-window",
            "splitw",
        ],
        short_value: b"cefFnstxylp",
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["tmux"],
        subcommands: &["run-shell", "run"],
        short_value: b"dtc",
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["screen"],
        short_value: b"SceEhpsTtX",
        long_values: &[("Logfile", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["dbus-launch"],
        long_values: &[("config-file", 1), ("autolaunch", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["ssh"],
        short_value: b"BbcDEeFIiJLlmOoPpQRSWw",
        operands: 1,
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["run0"],
        short_value: b"ugpD",
        long_values: &[
            ("user", 1),
            ("group", 1),
            ("unit", 1),
            ("property", 1),
            ("description", 1),
            ("slice", 1),
            ("slice-inherit", 0),
            ("setenv", 1),
            ("chdir", 1),
            ("nice", 1),
            ("background", 1),
            ("machine", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["nix-shell"],
        short_value: b"pIAE",
        long_values: &[
            ("packages", 1),
            ("include", 1),
            ("attr", 1),
            ("arg", 2),
            ("argstr", 2),
        ],
        command_long: Some("run"),
        runs: Runs::Nothing,
        ..PLAIN
    },
    Wrapper {
        names: &["nix"],
        subcommands: &["shell", "develop"],
        runs: Runs::AfterMarker(&["-c", "--command"]),
        ..PLAIN
    },
    Wrapper {
        names: &["conda", "mamba", "micromamba"],
        subcommands: &["run"],
        short_value: b"npr",
        long_values: &[("name", 1), ("prefix", 1), ("cwd", 1), ("root-prefix", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["poetry", "pipenv", "pdm", "hatch"],
        subcommands: &["run"],
        short_value: b"Pe",
        long_values: &[("directory", 1), ("project", 1), ("env", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["uv"],
        subcommands: &["run"],
        short_value: b"wp",
        long_values: &[
            ("with", 1),
            ("with-requirements", 1),
            ("with-editable", 1),
            ("python", 1),
            ("package", 1),
            ("directory", 1),
            ("project", 1),
            ("env-file", 1),
            ("index", 1),
            ("default-index", 1),
            ("extra", 1),
            ("group", 1),
            ("script", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["busybox"],
        ..PLAIN
    },
];
