//! Texts a differential run once caught the splitter missing a command in, kept so they
//! stay handled.

pub const FINDINGS: &[&str] = &[];
