//! Following `cd`: the directory the next commands run in, and undoing a `cd` that ran in a
//! subshell (before a `|`).

use super::*;

/// Makes the directory the one `cd operand` leads to from the directory in force. The
/// same `cd` from the same directory as the last one (`cd /; cd /`, a repeated line) leads
/// to the same place, which is not worked out again.
pub(super) fn follow_cd(cx: &mut Context, operand: String) {
    if let Some((from, last, to)) = &cx.last_cd {
        if *from == cx.dir_generation && *last == operand {
            if to.1 != cx.dir_generation {
                let to = to.clone();
                cx.restore_dir(to);
            }
            return;
        }
    }
    let from = cx.dir_generation;
    // From an unknown directory only a rooted operand leads somewhere known.
    let start = cx.dir.as_deref().or(is_rooted(&operand).then_some("/"));
    let after = start
        .and_then(|dir| join_path(dir, &operand))
        .filter(|dir| dir.len() <= MAX_DIR);
    cx.set_dir(after);
    cx.last_cd = Some((from, operand, (cx.dir.clone(), cx.dir_generation)));
}

/// After `|`: the command before it ran in a subshell, so its `cd` is undone.
pub(super) fn undo_directory(cx: &mut Context, st: &mut ListState) {
    if let Some(before) = st.undo.take() {
        cx.set_dir(before);
    }
}
