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
    // An operator inside an array assignment (escaped, inside `$( )`): bash reports the error
    // and goes on at the next line.
    "echo $(cat < do bre\nzap$'m'e -- 3>&-; \"zap\"me * -x\nak; do=(ne<E\nbody\nE\n); zapme",
    "echo \"${x:-$(x=( a # it's\n \\; )\nls \\; | ls \\;)}\"",
    "rm -rf / |& echo $(echo $(x=( a\n[[ -n \"$x\" ]] && \"zap\"me\n # it's\n a )\nX=1 gitbash -c  push \"'\" $1 |& </dev/nul</dev/null l z\\apme $1))",
    "x=(\n>&2 z\\apme |& echo \"${x#'a'}\" && [[ -n \"'\" ]] && cat \"$x\" --\n a # it's\n b )\nzapme",
    "trap 'echo \"${xme -p { zapme; }:-$(x=( a # it'\\''s\n a )\ncat --)}\" && while rm -rf /; do \"zap\"me -x --; break; done' EXIT & f() { x=( \necho $(</dev/null cat 'q w' * | $'zapme' {a,b} 'q w' |& zap$'m'e 'q w' \"'\") & echo \"${x#'a'}\"\na # it's\n 'q w' )\n\"zap\"me x=1; }; f",
    "x=( a # i\ncat <<-E && ls\n$'zapme' | $'zapme' \"$x\"; z\\apme '#'\nE\nsudo id \"'\" \\; <<<x && zapme | cat {a,b} $1\nt's\n b )\nzapme",
    // After `time`, a redirection ends its options: `-p` is the command.
    "set\n</dev/null \"zap\"me a * </dev/null; time </dev/null -p sudo id & echo \"${x:-$(X=1 zap$'m'e -x {a,b})}\"\nsid zapme",
    // `${` is closed by its first `}`; the default word of `${1:-..}` is split into words.
    "${1:-\ncat -\ncat <<\\E ; zapme\nzapme {a,b} >&2; X=1 zapme --\nsudo id --\nE\n$'zapme' || ls \\;\nbash -c '$1' _ ''\\''zapme'\\'' * \"'\\''\"\nls '\\''q w'\\'' || zap$'\\''m'\\''e '\\''}'\\'''\nzapme}",
    "za${1:-zapm\nE\ne}{p..p}me",
    "${1:{1..1}-zapme}",
    // `coproc` with a simple command inside `$( )` runs `COPROC`.
    "zap{m..m}e & echo eval \"${x:-$(if coproc c zap$'m'e x=1 >&2 & if zapme 1\n/usr/bin/zapme -- * >&2; then git push $1 {a,b} && \"zap\"me $1; $'zapme'; fi; then \"zap\"me; fi | zapme '}' && ls $'a\\0b' a)}\"",
    // A quoted command name holding newlines and a substitution.
    "\"zapmez\necho \"`X=1 rm -rf /`\"\nap\"me",
    // Brace expansion: a `}` before any comma does not close the list.
    "{zapmpme}e,}",
    // A heredoc delimiter holding `$'..'`: decoded, its NUL dropped.
    "cat <<E$(x)$'\\x00'\nbody\nE$(x)\nzapme",
    "cat <<E$@$'\\x00'\nbody\nE$@\nzapme",
    // A reserved word after a redirection inside `$( )`: bash reads it again with the
    // redirection last.
    "ecat <(</dev/null ! time ! id * x=1)",
    // An empty command name names no program.
    "PS4='$(zapme)';$'\\0' s;et -x; :",
    "zapme\ncase -x in 'x)')bash -c  zap$'m'e $1 $1; $'zapme' \"$x\";; *) 'zapme' $1 && git push -- {a,b} |& >&2 /usr/bin/zapme;; esac & </dev/null /usr/bin/zapme '}'\n$'\\x00x' EXIT",
    // A prompt string whose `$(` is not closed: bash runs it cut short (`zapm`).
    "PS4='$(zapme';set -x; :",
    // `>&` or `<&` with a target starting `-`: the descriptor is closed and the rest of the
    // target is a word of the command.
    "bash 2>& -c zapme",
    "2>&-zapme x; echo <& -zapme",
    // A heredoc delimiter holding `$((`, a body line starting the same `$((` over lines.
    "cat <<E$((1))\nbody\nE$((\necho \"${x#'}'}\" | if zapme && X=1 /usr/bin/zapme 'q w' {a,b} & id; then zap''me -x \"$x\"; fi | bash -c 'E`x`\nzapme$1' _ 'z\\apme \"$x\" $1; \"zap\"me x=1\nzapme'\n1))\nzapme",
    // A process substitution in an unquoted `${1:-..}` inside `"$( )"`.
    "echo \"\n3>&- cat\n$(z${1:-zapm\n>&2 zapme $1 x=1 || </dev/null X=1 zapme \"$x\" | cat <(ls '#')\ne}apme)\"",
    // Brace expansion reads a word as written with quotes of its own: a `"` inside
    // backquotes (or `${ }`) inside double quotes ends them, so braces the parser reads as
    // quoted expand, and each result runs its backquotes again.
    "\"`while '';do \"'\";done&x=(#'\n)\n{p,}{m..m}e`\"",
    "\"`: \"'\";'{zap,}me'`\"",
    "echo x=\"`: \"'\";'{zap,}me'`\"; for v in \"`: \"'\";'zap{me,}'`\"; do :; done",
    "cat > \"`: \"'\";'z{a,}pme'`\"; x=(\"`: \"'\";'za{p,}me'`\")",
    "cmd\"${x:-\"'`'{zap,}me'`'\"}\"",
    // Single quotes in arithmetic, in `${ }` and in an array subscript pair up but do not
    // quote: bash expands the text inside them.
    "(( '$(zapme)' ))",
    "echo $(( 'a[$(zapme)]' )); for (( 'a[$(zapme)]'; 0; )); do :; done",
    "a=(1); echo ${a['$(zapme)']} \"${x:-'$(zapme)'}\"",
    "a=(['$(zapme)']=1)",
    "echo $[ '$(zapme)' ]",
    // Names and values expanded a second time as subscripts.
    "printf '-va[$(zapme)]' x",
    "declare -n r='a[$(zapme)]'; echo $r",
    "declare -i 'x=a[$(zapme)]'; declare -a 'a=([$(zapme)]=1)'",
    "[[ 1 -eq 'a[$(zapme)]' ]]",
    "a['a[$(zapme)]']=1",
    "x='$(zapme)'; printf -v 'a[${x@P}]' 1",
    // The value of an unquoted known parameter is split into words: a wrapper in it runs
    // the next word.
    "${1:-eval zapme}",
    "${1:-nohup zapme} x; ${x:-nohup zapme}",
    // Inside `$( )` a heredoc body ends at a line that starts with the delimiter and holds
    // a `)`; what follows the delimiter is read as commands.
    "echo $(cat <<E\nbody\nE)\nzapme",
    "echo $(cat <<E\nbody\nEzapme) ]]\n); zapme",
    // A `$((` that is not arithmetic is cut at its matching `)` without reading heredocs.
    "echo $((cat) <<E\n)\nzapme\nE",
    "( echo $((<<'E'\n zapme $1 ) && rm -rf / $'a\\0b' \"'\")\n</dev/null cat <<E${x} && ls\nid -- \"'\"\nls \"'\"\nE${x}\ngit push \"'\" -- && /usr/bin/zapme {a,b} a ) & X=1 $'zapme' -- a >/dev/null; while sudo id; do X=1 <<<x git push -- <<<x; break; done",
    // An array element's subscript before a command is one word up to its `]`: an
    // operator or a blank inside it does not end the word, `<<` starts no heredoc.
    "a['0']=1 zapme",
    "a[x<<1]=1 zapme",
    "a[$(:)]=1 zapme",
    "a[x>1]=1 zapme",
    "a[x|1]=1 zapme",
    "a[x&1]=1 zapme",
    "a[0;0]=1 zapme",
    "a[1 ]=1 zapme",
    "a[1<<2]=3\nzapme",
    "a[$(zapme)]=1",
    "echo a[x; zapme]",
    "X=1 >f a[x; zapme]=1",
    // An unquoted heredoc's lines are joined at a backslash-newline before the delimiter
    // is looked for.
    "cat <<EOF\nE\\\nOF\nzapme\nEOF",
    "cat <<-EOF\nE\\\nOF\nzapme\nEOF",
    "x=$(cat <<EOF\nE\\\nOF\nzapme\nEOF\n)",
    // A backslash-newline after `$` is removed first; `$'..'` in a default is decoded.
    "$\\\n'\\x7aapme'",
    "$\\\n\"zapme\"",
    "$\\\n{HOME:+zapme}",
    "${x:-$'zapme'}",
    "\"${x:-$'zapme'}\"",
    // A shell inside a compound command, or after `exec <<<`, reads the text given to
    // them; so do `.` and `source` of standard input.
    "{ sh; } <<< 'zapme'",
    "( sh ) <<< 'zapme'",
    "if true; then sh; fi <<< 'zapme'",
    "exec 0<<< 'zapme'; sh",
    ". /dev/stdin <<< 'zapme'",
    "source /proc/self/fd/0 <<< 'zapme'",
    // A value holding a substitution, expanded where the variable is used as a number;
    // the name of a shell's startup file, expanded when the shell starts; completion's
    // command and word list.
    "x='a[$(zapme)]'; (( x ))",
    "x='a[$(zapme)]'; echo $((x))",
    "x='a[$(zapme)]'; [[ $x -eq 0 ]]",
    "x='a[$(zapme)]'; let x",
    "x='a[$(zapme)]'; y=x; (( y ))",
    "x='a[`zapme`]' bash -c '(( x ))'",
    "declare x='a[$(zapme)]'; a=(1); : ${a[x]}",
    "BASH_ENV='$(zapme)' bash -c :",
    "BASH_ENV=/dev/../dev/stdin bash -c : <<< 'zapme'",
    "printf -v x 'a[\\x24(zapme)]'; (( x ))",
    "printf -v x '%s(zapme)]' 'a[$'; (( x ))",
    "env BASH_ENV=/dev/stdin bash -c : <<< 'zapme'",
    "bash /dev/../dev/stdin <<< 'zapme'",
    "compgen -C zapme x",
    "compgen -W '$(zapme)' x",
    // An alias read where it is used, with its arguments; one used inside itself.
    "shopt -s expand_aliases\nalias t='cd /; zapme'\nt x",
    "shopt -s expand_aliases\nalias zapme='zapme -x'\nzapme y",
    // The words after an alias read as text: a keyword after one ending in `;`, another
    // alias after one ending in a blank; a pattern in them stays one.
    "shopt -s expand_aliases\nalias t='true;'\nt if zapme; then :; fi",
    "shopt -s expand_aliases\nalias t='true;'\nt { zapme; }",
    "shopt -s expand_aliases\nalias e='echo ' x='; zapme'\ne x",
    // A here-document in an alias reads its body from the lines after the use.
    "shopt -s expand_aliases\nalias t='echo; zap<<'E'\nme' u=x\nt",
];
