//! The fixed part of the tree: its directories, their fixed children, and the pages
//! rendered from the tree's state when they are opened.

use super::names;
use super::pages;
use super::state::State;
use super::types::Kind;
use super::Tree;

/// The fixed children of a fixed directory: (name, inode, kind).
pub(super) type Children = &'static [(&'static str, u64, Kind)];

pub(super) fn children(ino: u64) -> Option<Children> {
    const ROOT: Children = &[
        ("index.md", names::ROOT_INDEX, Kind::File),
        ("ctl", names::CTL, Kind::Dir),
        ("cmd", names::CMD, Kind::Dir),
        ("skills", names::SKILLS, Kind::Dir),
        ("events", names::EVENTS, Kind::File),
    ];
    const CTL: Children = &[("index.md", names::CTL_INDEX, Kind::File)];
    const CMD: Children = &[("index.md", names::CMD_INDEX, Kind::File)];
    const SKILLS: Children = &[
        ("index.md", names::SKILLS_INDEX, Kind::File),
        ("terminalfs", names::SKILLS_TFS, Kind::Dir),
    ];
    const SKILLS_TFS: Children = &[
        ("index.md", names::SKILLS_TFS_INDEX, Kind::File),
        ("SKILL.md", names::SKILL_MD, Kind::File),
    ];
    match ino {
        names::ROOT => Some(ROOT),
        names::CTL => Some(CTL),
        names::CMD => Some(CMD),
        names::SKILLS => Some(SKILLS),
        names::SKILLS_TFS => Some(SKILLS_TFS),
        _ => None,
    }
}

pub(super) fn is_page(ino: u64) -> bool {
    matches!(
        ino,
        names::ROOT_INDEX
            | names::CTL_INDEX
            | names::CMD_INDEX
            | names::SKILLS_INDEX
            | names::SKILLS_TFS_INDEX
            | names::SKILL_MD
    )
}

pub(super) fn parent_of(ino: u64) -> u64 {
    match ino {
        names::SKILLS_TFS => names::SKILLS,
        _ => names::ROOT,
    }
}

/// Permissions of a fixed directory: the two the user works in, and the root, are
/// the user's; the rest are read-only.
pub(super) fn dir_perm(ino: u64) -> u16 {
    if ino == names::CTL || ino == names::CMD || ino == names::ROOT {
        0o700
    } else {
        0o500
    }
}

impl Tree {
    fn site<'a>(&'a self, state: &State) -> pages::Site<'a> {
        pages::Site {
            mount: self.config.mount.as_deref(),
            shell: self.spawner.shell(),
            cwd: self.spawner.cwd(),
            settings: self.policy.path(),
            rules: self.policy.rule_count(),
            ignored: self.policy.rules().ignored.clone(),
            sandbox: self.policy.sandbox_lines(),
            commands: state.cmd.len(),
            wait_timeout: self.config.wait_timeout,
            keep: self.config.keep,
            settle: self.config.settle,
            hosts: crate::hosts::driver::section(&self.policy.rules().hosts),
        }
    }

    /// The bytes of a fixed page as it reads now.
    pub(super) fn render_page(&self, state: &State, ino: u64) -> Vec<u8> {
        let site = self.site(state);
        let page = match ino {
            names::ROOT_INDEX => pages::root_index(&site),
            names::CTL_INDEX => {
                let mut drafts: Vec<(&str, &str)> = state
                    .ctl
                    .values()
                    .filter_map(|id| match state.entries.get(id) {
                        Some(super::state::Entry::Draft(draft)) => {
                            Some((draft.name.as_str(), draft.stage_text()))
                        }
                        _ => None,
                    })
                    .collect();
                drafts.sort_unstable();
                pages::ctl_index(&site, &drafts, &state.refusals)
            }
            names::CMD_INDEX => {
                let rows: Vec<_> = state
                    .cmd
                    .values()
                    .filter_map(|id| state.command(*id))
                    .map(|c| {
                        let (exitcode, started, duration, kept, dropped) = match &c.run {
                            super::state::Run::Denied { .. } => (None, Some(c.created), None, 0, 0),
                            super::state::Run::Starting => (None, None, None, 0, 0),
                            super::state::Run::Job(job) => {
                                let s = job.snapshot();
                                (
                                    s.life.exit().map(|exit| exit.code),
                                    s.life.started_at(),
                                    s.life.duration(),
                                    s.stdout.kept + s.stderr.kept,
                                    s.stdout.dropped + s.stderr.dropped,
                                )
                            }
                        };
                        (c, exitcode, started, duration, kept, dropped)
                    })
                    .collect();
                let rows: Vec<pages::Row> = rows
                    .iter()
                    .map(
                        |(c, exitcode, started, duration, kept, dropped)| pages::Row {
                            name: &c.name,
                            status: c.run.index_word(),
                            exitcode: *exitcode,
                            started: *started,
                            duration: *duration,
                            command: &c.text,
                            kept: *kept,
                            dropped: *dropped,
                        },
                    )
                    .collect();
                let evicted = self.spool.get().map_or(0, |spool| spool.evictions());
                pages::cmd_index(&site, &rows, evicted)
            }
            names::SKILLS_INDEX => pages::skills_index(),
            names::SKILLS_TFS_INDEX => pages::skill_dir_index(),
            names::SKILL_MD => super::skill::skill(&site),
            _ => unreachable!("is_page lists exactly the pages rendered here"),
        };
        page.into_bytes()
    }
}
