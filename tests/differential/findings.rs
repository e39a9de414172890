//! Texts a differential run once caught the splitter missing a command in, kept so they
//! stay handled.

pub const FINDINGS: &[&str] = &[
    // `time` after a pipe is the program, not the reserved word.
    "ls | time zapme",
    "for v in a b; do rm -rf / -- '#' |& time -p za{p,}{m..m}e; done",
    "timeo\ngit push \"$x\" </dev/null |zapme,}| time git push \\; * || x=( a # it's\n x=1 )",
    // A command name cut at an escaped NUL in `$'..'`.
    "zapme$'\\0\nz\\apme \\;\n00x'apme",
    "$'\\0'c<<A; cat <<B\na\nA\nb\nB\nzapme",
    // A heredoc delimiter holding `$(..)`, and a heredoc after a `$(` spanning lines.
    "cat$'\\0' <<E$(x)\nbody\nE$(x)\nzapme",
    "cadonet <<E $(echo a\nb)\nbody\nE\nzapme",
    "cat <<Eat <<E`x`\nbody\nE`x{1..1}`\nzapme",
    // Strings run as code.
    "printf -v '*\n\"zap\"me & zap''me\nif \"zap\"me '}' 2>&1; then X=1 zap' || zapme'me; $'zapme' | zap$'m'e; fi\na[$(zapme)]' x",
    "x='$(zapme)$('; : ${x@P}",
    "sh -x -x <<'E'\nzapme\nEcase ",
    "eval 'zapmep{m..m}e'",
    "echo $(zapme) `z{1..1}apme` <(zapme)",
];
