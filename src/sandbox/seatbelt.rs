//! A Seatbelt profile (`sandbox-exec -p PROFILE`) for macOS from the same plan as the
//! Linux sandbox: everything allowed but writes, which go only to the writable roots
//! and never to the read-only paths; reads of the unreadable paths denied; the network
//! only to the command's proxy on loopback (or none). The text is built and tested on
//! every platform; it is not run in CI (no macOS runner runs commands there).

use std::path::Path;

/// A path as a Seatbelt string literal.
fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    let mut out = String::from("\"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The profile for `plan`, with `proxy_port` the one port it may connect to.
pub fn profile(plan: &super::Plan, proxy_port: Option<u16>) -> String {
    let mut out = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
    let subpaths = |list: &[std::path::PathBuf]| -> String {
        list.iter()
            .map(|p| format!("\n  (subpath {})", quoted(p)))
            .collect()
    };
    if !plan.writable.is_empty() {
        out.push_str(&format!(
            "(allow file-write*{})\n",
            subpaths(&plan.writable)
        ));
    }
    if !plan.read_only.is_empty() {
        out.push_str(&format!(
            "(deny file-write*{})\n",
            subpaths(&plan.read_only)
        ));
    }
    if !plan.hidden.is_empty() {
        out.push_str(&format!("(deny file-read*{})\n", subpaths(&plan.hidden)));
    }
    out.push_str("(deny network-outbound)\n(deny network-bind)\n");
    if let Some(port) = proxy_port {
        out.push_str(&format!(
            "(allow network-outbound (remote tcp \"localhost:{port}\"))\n"
        ));
    }
    if plan.allow_local_binding {
        out.push_str("(allow network-bind (local ip \"localhost:*\"))\n(allow network-inbound (local ip \"localhost:*\"))\n");
    }
    if plan.allow_all_unix_sockets {
        out.push_str("(allow network-outbound (remote unix-socket))\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn writes_reads_and_network_are_spelled() {
        let plan = super::super::Plan {
            writable: vec![PathBuf::from("/work/p"), PathBuf::from("/tmp/t \"x\"")],
            read_only: vec![PathBuf::from("/work/p/.git/hooks")],
            hidden: vec![PathBuf::from("/home/u/.ssh")],
            ..Default::default()
        };
        let text = profile(&plan, Some(3128));
        assert!(text.starts_with("(version 1)\n(allow default)\n(deny file-write*)\n"));
        assert!(text.contains(
            "(allow file-write*\n  (subpath \"/work/p\")\n  (subpath \"/tmp/t \\\"x\\\"\"))"
        ));
        assert!(text.contains("(deny file-write*\n  (subpath \"/work/p/.git/hooks\"))"));
        assert!(text.contains("(deny file-read*\n  (subpath \"/home/u/.ssh\"))"));
        assert!(text.contains("(allow network-outbound (remote tcp \"localhost:3128\"))"));
        // The denials come after the grants: Seatbelt's last matching rule wins.
        assert!(
            text.find("(allow file-write*").unwrap() < text.find("(deny file-write*\n").unwrap()
        );
        let closed = profile(&super::super::Plan::default(), None);
        assert!(closed.contains("(deny network-outbound)") && !closed.contains("remote tcp"));
    }
}
