//! Texts that stress the splitter: a small deterministic generator of random shell-like
//! text and a set of pathological inputs. The unit tests use them to show the splitter
//! never panics; `benches/policy.rs` uses the same texts to measure how fast it is.

/// xorshift64*: a small deterministic generator, so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub const PIECES: &[&[u8]] = &[
    b"'",
    b"\"",
    b"(",
    b")",
    b"$",
    b"$(",
    b"`",
    b"\\",
    b";",
    b"|",
    b"&",
    b"&&",
    b"||",
    b"\n",
    b" ",
    b"\t",
    b"if",
    b"then",
    b"elif",
    b"else",
    b"fi",
    b"case",
    b"esac",
    b"in",
    b";;",
    b";&",
    b"for",
    b"do",
    b"done",
    b"while",
    b"until",
    b"{",
    b"}",
    b"<<",
    b"<<-",
    b"<<<",
    b"EOF",
    b"<(",
    b">(",
    b">",
    b"<",
    b"2>&1",
    b"&>",
    b"#",
    b"=",
    b"X=",
    b"sudo",
    b"sh -c",
    b"bash",
    b"env",
    b"nohup",
    b"timeout",
    b"xargs",
    b"-c",
    b"$'",
    b"\\x",
    b"\\u",
    b"\\0",
    b"${",
    b"$((",
    b"((",
    b"))",
    b"[[",
    b"]]",
    b"*",
    b"a",
    b"x y",
    b"{a,b}",
    b"$IFS",
    b"function",
    b"()",
    b"eval",
    b"find -exec",
    b"\\;",
    b"\r",
    b"\xc3\xa9",
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\x00",
    b"rm -rf /",
    b"!",
    b",",
];

pub fn random_text(rng: &mut Rng, pieces: usize) -> String {
    let mut bytes = Vec::new();
    for _ in 0..pieces {
        bytes.extend_from_slice(PIECES[rng.below(PIECES.len())]);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Inputs built to defeat a naive parser: deep nesting, unclosed constructs, repeated
/// re-parsing. Each is about `size` bytes long.
pub fn pathological_inputs(size: usize) -> Vec<(&'static str, String)> {
    let repeat = |unit: &str| unit.repeat(size / unit.len());
    vec![
        ("command substitutions", repeat("$(")),
        ("closed substitutions", repeat("$(a)")),
        ("quoted substitutions", repeat("\"$(")),
        ("arithmetic", repeat("$((")),
        ("subshells", repeat("((")),
        ("open parens", repeat("(")),
        ("parameters", repeat("${")),
        ("backticks", repeat("`")),
        ("escaped backticks", repeat("`\\`\\\\\\`")),
        ("process substitution", repeat("<(")),
        ("quotes", repeat("'\"")),
        ("sh -c", repeat("sh -c \"")),
        ("sh -c nested", format!("{}x", repeat("sh -c '"))),
        ("heredocs", repeat("<<E\n")),
        ("braces", repeat("{a,")),
        ("brace word", format!("{}}}", repeat("{,"))),
        ("cases", repeat("case a in a) ")),
        ("eval", repeat("eval ")),
        ("cd", repeat("cd a; rm -rf *; ")),
        (
            "cd in compounds",
            format!("{}{}", repeat("if a; then "), repeat("cd /; ")),
        ),
        ("wrappers", repeat("nohup ")),
        ("find exec", repeat("find -exec ")),
        ("words", repeat("a ")),
        ("one word", repeat("a")),
        ("newlines", repeat("\n")),
        ("escapes", repeat("\\")),
        ("ansi-c", repeat("$'\\x")),
        (
            "renamed programs",
            renaming(
                size,
                |n| format!("hash -p /x{n} t\n"),
                |n| format!("t {n};"),
            ),
        ),
        (
            "programs of 16 meanings",
            renaming(
                size,
                |n| format!("hash -p /x{} t\n", n % 16),
                |n| format!("t {n};"),
            ),
        ),
        (
            "aliases",
            renaming(
                size,
                |n| format!("alias a{n}='echo {n}'\n"),
                |n| format!("a{} x;", n % 20000),
            ),
        ),
        ("glob command name", format!("/usr/bin/{}", repeat("?*"))),
        ("glob file written", format!("echo > /tmp/{}", repeat("?*"))),
        ("glob operands", format!("rm -rf {}", repeat("/?* "))),
        ("rm operands", format!("rm -rf {}", repeat("x "))),
        ("chmod operands", format!("chmod -R 777 {}", repeat("x "))),
        ("rm operands rooted", format!("rm -rf {}", repeat("/x "))),
        ("cp operands", format!("cp -r {}", repeat("x "))),
        ("dd operands", format!("dd {}", repeat("of=x "))),
        ("git operands", format!("git push {}", repeat("x "))),
        (
            "script",
            repeat(
                "echo \"$(date)\" && ls -la | grep -v '^d' > out.txt 2>&1; for f in *.rs; do \
                 wc -l \"$f\"; done\nif [ -f x ]; then timeout 5 make test; fi\n",
            ),
        ),
    ]
}

/// A text of `size` bytes that renames names in its first quarter (`define(n)`) and uses
/// them in the rest (`use(n)`).
fn renaming(
    size: usize,
    define: impl Fn(usize) -> String,
    use_: impl Fn(usize) -> String,
) -> String {
    let mut text = String::with_capacity(size + 64);
    let mut n = 0;
    while text.len() < size / 4 {
        text.push_str(&define(n));
        n += 1;
    }
    while text.len() < size {
        text.push_str(&use_(n));
        n += 1;
    }
    text
}

/// The shell scripts Debian packages installed on this machine: maintainer scripts under
/// `/var/lib/dpkg/info` and `sh`/`bash` scripts in `/usr/bin` and `/usr/sbin`, as
/// `(path, text)`, sorted by path. Empty on a machine without them.
pub fn debian_scripts() -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let maintainer = ["preinst", "postinst", "prerm", "postrm", "config"];
    for dir in ["/var/lib/dpkg/info", "/usr/bin", "/usr/sbin"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let in_dpkg = dir == "/var/lib/dpkg/info";
            if in_dpkg
                && !path
                    .extension()
                    .is_some_and(|e| maintainer.iter().any(|m| e == *m))
            {
                continue;
            }
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let first = bytes.split(|&b| b == b'\n').next().unwrap_or(&[]);
            let first = String::from_utf8_lossy(first);
            let shell = first.starts_with("#!")
                && ["/sh", "/bash", "env sh", "env bash"]
                    .iter()
                    .any(|s| first.trim_end().ends_with(s) || first.contains(&format!("{s} ")));
            if shell && (in_dpkg || !bytes.contains(&0)) {
                out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out.sort();
    out
}
