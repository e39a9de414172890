//! Shell texts for the differential test: a small grammar that nests lists, compound
//! commands, substitutions, quoting, heredocs and the shell's string-evaluating builtins,
//! and mutations (insert, delete, repeat, splice) of a seed corpus that covers every
//! construct the splitter has been wrong about.

use super::samples::Rng;

/// Command names the generator writes; `zapme` stands for a denied program.
const NAMES: &[&str] = &[
    "zapme",
    "zapme",
    "/usr/bin/zapme",
    "z\\apme",
    "'zapme'",
    "\"zap\"me",
    "zap$'m'e",
    "$'zapme'",
    "zap''me",
    "ls",
    "cat",
    "git push",
    "rm -rf /",
    "sudo id",
    "id",
];

/// Words that may follow a command name.
const ARGUMENTS: &[&str] = &[
    "a", "-x", "'q w'", "\"$x\"", "$1", "--", "x=1", "'#'", "\\;", "'}'", "\"'\"", "{a,b}", "*",
];

/// Redirections placed before or after a command.
const REDIRECTIONS: &[&str] = &["</dev/null", ">/dev/null", "2>&1", "<<<x", ">&2", "3>&-"];

/// Heredoc delimiters, quoted and not.
const DELIMITERS: &[&str] = &[
    "E", "'E'", "\"E\"", "\\E", "E$(x)", "E`x`", "E${x}", "E$((1))", "E$@", "-E",
];

/// Pieces the mutations insert.
const PIECES: &[&str] = &[
    "'",
    "\"",
    "(",
    ")",
    "$(",
    "`",
    "\\",
    ";",
    "|",
    "&",
    "&&",
    "\n",
    " ",
    "{",
    "}",
    "<<E\n",
    "<<'E'\n",
    "\nE\n",
    "#",
    "$'\\0'",
    "$'\\x00'",
    "time ",
    "! ",
    "coproc ",
    "zapme",
    " zapme",
    "\nzapme\n",
    ";zapme;",
    "${",
    "$((",
    "))",
    "[[",
    "]]",
    "case ",
    " in ",
    "esac",
    "do ",
    "done",
    "then ",
    "fi",
    "</dev/null ",
    "eval ",
    "bash -c ",
    "trap ",
    " EXIT",
    "$1",
    "$0",
    "${1:-zapme}",
    "=(",
    "a[$(zapme)]",
    "<<<",
    "{1..1}",
    "*",
    "?",
    "[m]",
];

pub struct Generator {
    rng: Rng,
    seeds: Vec<String>,
}

impl Generator {
    pub fn new(seed: u64, seeds: &[&str]) -> Generator {
        Generator {
            rng: Rng(seed | 1),
            seeds: seeds.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// The next text: half from the grammar, half mutated seeds (or mutated grammar).
    pub fn next_text(&mut self) -> String {
        match self.rng.below(4) {
            0 => self.list(3),
            1 => {
                let text = self.list(3);
                self.mutate(text)
            }
            _ => {
                let seed = self.seeds[self.rng.below(self.seeds.len())].clone();
                self.mutate(seed)
            }
        }
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.rng.below(from.len())]
    }

    fn mutate(&mut self, mut text: String) -> String {
        for _ in 0..1 + self.rng.below(3) {
            let cut = self.boundary(&text);
            match self.rng.below(6) {
                0 | 1 => {
                    let piece = self.pick(PIECES);
                    text.insert_str(cut, piece);
                }
                2 => {
                    let end = self.boundary(&text).max(cut);
                    text.replace_range(cut..end.min(cut + 8), "");
                }
                3 => {
                    let end = self.boundary(&text).max(cut);
                    let copy = text[cut..end].to_owned();
                    text.insert_str(end, &copy);
                }
                4 => {
                    let other = self.seeds[self.rng.below(self.seeds.len())].clone();
                    let at = self.boundary(&other);
                    text.insert_str(cut, &other[at..]);
                }
                _ => {
                    let list = self.list(1);
                    text.insert_str(cut, &format!("\n{list}\n"));
                }
            }
            if text.len() > 4096 {
                text.truncate(self.boundary_below(&text, 4096));
            }
        }
        text
    }

    /// A character boundary chosen at random.
    fn boundary(&mut self, text: &str) -> usize {
        let at = self.rng.below(text.len() + 1);
        self.boundary_below(text, at)
    }

    fn boundary_below(&self, text: &str, mut at: usize) -> usize {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    /// A list of one to three pipelines.
    fn list(&mut self, depth: usize) -> String {
        let mut out = self.command(depth);
        for _ in 0..self.rng.below(3) {
            let separator = self.pick(&["; ", " && ", " || ", "\n", " & ", " | ", " |& "]);
            out.push_str(separator);
            out.push_str(&self.command(depth));
        }
        out
    }

    fn simple(&mut self) -> String {
        let mut words = Vec::new();
        if self.rng.below(5) == 0 {
            words.push("X=1".to_owned());
        }
        if self.rng.below(6) == 0 {
            words.push(self.pick(REDIRECTIONS).to_owned());
        }
        words.push(self.pick(NAMES).to_owned());
        for _ in 0..self.rng.below(3) {
            words.push(self.pick(ARGUMENTS).to_owned());
        }
        if self.rng.below(6) == 0 {
            words.push(self.pick(REDIRECTIONS).to_owned());
        }
        words.join(" ")
    }

    fn command(&mut self, depth: usize) -> String {
        if depth == 0 {
            return self.simple();
        }
        let inner = depth - 1;
        match self.rng.below(30) {
            0..=7 => self.simple(),
            8 => format!("{{ {}; }}", self.list(inner)),
            9 => format!("( {} )", self.list(inner)),
            10 => format!("if {}; then {}; fi", self.list(inner), self.list(inner)),
            11 => format!(
                "while {}; do {}; break; done",
                self.simple(),
                self.list(inner)
            ),
            12 => format!("for v in a b; do {}; done", self.list(inner)),
            13 => format!(
                "case {} in {}) {};; *) {};; esac",
                self.pick(ARGUMENTS),
                self.pick(&["a", "*", "'x)'", "(a|b"]),
                self.list(inner),
                self.list(inner)
            ),
            14 => format!("echo $({})", self.list(inner)),
            15 => format!("echo \"`{}`\"", self.list(inner).replace('`', "")),
            16 => format!("echo \"${{x:-$({})}}\"", self.list(inner)),
            17 => format!("cat <({})", self.list(inner)),
            18 => {
                let delimiter = self.pick(DELIMITERS);
                let bare = delimiter.replace(['\'', '"', '\\'], "");
                let bare = bare.trim_start_matches('-');
                let dash = if delimiter.starts_with('-') { "-" } else { "" };
                format!(
                    "cat <<{dash}{} {}\n{}\n{bare}\n{}",
                    delimiter.trim_start_matches('-'),
                    self.pick(&["", "; zapme", "&& ls", "| cat"]),
                    self.list(inner),
                    self.list(inner)
                )
            }
            19 => {
                let shell = self.pick(&[
                    "bash -c",
                    "sh -c",
                    "eval",
                    "bash -c '$1' _",
                    "trap",
                    "bash <<<",
                ]);
                let quoted = single_quote(&self.list(inner));
                let tail = if shell == "trap" { " EXIT" } else { "" };
                format!("{shell} {quoted}{tail}")
            }
            20 => format!(
                "{} {}",
                self.pick(&["time", "time -p", "! time", "time !", "coproc c", "!"]),
                self.command(inner)
            ),
            21 => format!("</dev/null {}", self.command(inner)),
            22 => format!("f() {{ {}; }}; f", self.list(inner)),
            23 => format!("[[ -n {} ]] && {}", self.pick(ARGUMENTS), self.simple()),
            24 => format!("(( 1 )) && {}", self.simple()),
            25 => format!(
                "x=( a # it's\n {} )\n{}",
                self.pick(ARGUMENTS),
                self.simple()
            ),
            26 => format!("{} $'a\\0b' {}", self.pick(NAMES), self.pick(ARGUMENTS)),
            27 => format!("{}{{m..m}}e", self.pick(&["zap", "za{p,}"])),
            28 => self
                .pick(&["/usr/bin/zap?e", "/usr/bin/zap*", "zap[m]e"])
                .to_owned(),
            _ => format!("echo \"${{x#'{}'}}\"", self.pick(&["}", "a", "'"])),
        }
    }
}

/// `text` in single quotes, its own single quotes written as `'\''`.
fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
