//! The output of a `printf` whose format and arguments are known, so that `$(printf ...)`
//! used as a command name is read as the name it prints.

/// What `printf -v NAME FORMAT ARGS...` assigns, roughly: the format with its escapes
/// decoded, each conversion (`%s`, `%b`, `%d` ...) replaced by the next argument (its
/// escapes decoded for `%b`), the format used again while arguments remain. None without
/// a format.
pub(crate) fn printf_output(args: &[String]) -> Option<String> {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        if arg == "--" {
            index += 1;
            break;
        }
        if !arg.starts_with('-') {
            break;
        }
        index += if arg == "-v" { 2 } else { 1 };
    }
    let format: Vec<char> = args.get(index)?.chars().collect();
    let mut rest = args.get(index + 1..).unwrap_or(&[]).iter();
    let mut out = String::new();
    loop {
        let mut used = false;
        let mut at = 0;
        while at < format.len() && out.len() <= MAX_PRINTF_OUTPUT {
            match format[at] {
                '\\' => at = decode_escape(&format, at + 1, false, &mut out),
                '%' if format.get(at + 1) == Some(&'%') => {
                    out.push('%');
                    at += 2;
                }
                '%' => {
                    at += 1;
                    while at < format.len() && !format[at].is_ascii_alphabetic() {
                        at += 1;
                    }
                    let arg = rest.next().map_or("", String::as_str);
                    used = true;
                    if format.get(at) == Some(&'b') {
                        let arg: Vec<char> = arg.chars().collect();
                        let mut from = 0;
                        while from < arg.len() {
                            if arg[from] == '\\' {
                                from = decode_escape(&arg, from + 1, true, &mut out);
                            } else {
                                out.push(arg[from]);
                                from += 1;
                            }
                        }
                    } else {
                        out.push_str(arg);
                    }
                    at += 1;
                }
                c => {
                    out.push(c);
                    at += 1;
                }
            }
        }
        if !used || rest.len() == 0 || out.len() > MAX_PRINTF_OUTPUT {
            return Some(out);
        }
    }
}

/// How much of `printf`'s output is worked out.
pub(crate) const MAX_PRINTF_OUTPUT: usize = 1 << 16;

/// Decodes the escape whose letter is at `at` (after a backslash) as `printf` does in its
/// format, or in a `%b` argument (`argument`, where `\0` leads up to three octal digits),
/// into `out`; returns where the text goes on.
pub(crate) fn decode_escape(text: &[char], at: usize, argument: bool, out: &mut String) -> usize {
    let Some(&letter) = text.get(at) else {
        out.push('\\');
        return at;
    };
    let number = |from: usize, radix: u32, most: usize| {
        let digits = text[from..]
            .iter()
            .take(most)
            .take_while(|c| c.is_digit(radix))
            .count();
        let value: String = text[from..from + digits].iter().collect();
        (u32::from_str_radix(&value, radix).ok(), from + digits)
    };
    let (code, next) = match letter {
        'x' => number(at + 1, 16, 2),
        'u' => number(at + 1, 16, 4),
        'U' => number(at + 1, 16, 8),
        '0' if argument => number(at + 1, 8, 3),
        '0'..='7' => number(at, 8, 3),
        'n' => (Some(10), at + 1),
        't' => (Some(9), at + 1),
        'r' => (Some(13), at + 1),
        'a' => (Some(7), at + 1),
        'b' => (Some(8), at + 1),
        'f' => (Some(12), at + 1),
        'v' => (Some(11), at + 1),
        'e' | 'E' => (Some(27), at + 1),
        '\\' | '\'' | '"' | '?' => (Some(u32::from(letter)), at + 1),
        _ => {
            out.push('\\');
            out.push(letter);
            return at + 1;
        }
    };
    match code.and_then(char::from_u32) {
        Some(c) => out.push(c),
        None => {
            out.push('\\');
            out.push(letter);
            return at + 1;
        }
    }
    next
}
