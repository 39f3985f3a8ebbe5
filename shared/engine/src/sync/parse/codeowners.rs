//! CODEOWNERS in GitHub's syntax: one rule per line, a pattern and then owners. A line GitHub
//! would reject is a warning and is skipped, never an error for the file.
//!
//! Bounds: one linear pass over at most [`super::MAX_INPUT_BYTES`]; rules and warnings are never
//! more than the file's lines, and a warning quotes at most [`QUOTED_CHARS`] characters of the
//! token it rejects.

use serde::Serialize;

use super::model::ParseRefusal;
use super::text::decode;

/// One rule. No owners means the pattern unsets ownership for the paths it matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeOwnersRule {
    pub line: u32,
    pub pattern: String,
    pub owners: Vec<String>,
}

/// A skipped line and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeOwnersWarning {
    pub line: u32,
    pub reason: String,
}

pub fn parse_codeowners(
    bytes: &[u8],
) -> Result<(Vec<CodeOwnersRule>, Vec<CodeOwnersWarning>), ParseRefusal> {
    let text = decode(bytes)?;
    let mut rules = Vec::new();
    let mut warnings = Vec::new();
    for (index, raw) in text.split('\n').enumerate() {
        let line = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let tokens = tokens(raw);
        let Some((pattern, owners)) = tokens.split_first() else {
            continue;
        };
        if let Some(reason) = pattern_problem(pattern).or_else(|| owners_problem(owners)) {
            warnings.push(CodeOwnersWarning { line, reason });
            continue;
        }
        rules.push(CodeOwnersRule {
            line,
            pattern: pattern.clone(),
            owners: owners.to_vec(),
        });
    }
    Ok((rules, warnings))
}

/// Whitespace-separated tokens up to a comment. A `#` starts a comment at the start of the line or
/// after whitespace; `\#` and `\ ` are a literal `#` and space inside a pattern.
fn tokens(line: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('#' | ' ')) => {
                current.extend(chars.next());
            }
            '#' if current.is_empty() => break,
            c if c.is_whitespace() => {
                if !current.is_empty() {
                    tokens.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// Characters of a rejected token a warning repeats.
pub(crate) const QUOTED_CHARS: usize = 100;

/// `token` for a warning, cut at [`QUOTED_CHARS`] characters.
fn quoted(token: &str) -> String {
    match token.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{:?}...", &token[..cut]),
        None => format!("{token:?}"),
    }
}

/// Gitignore syntax that GitHub does not accept in CODEOWNERS.
fn pattern_problem(pattern: &str) -> Option<String> {
    if pattern.starts_with('!') {
        return Some(format!(
            "negated pattern {} is not supported",
            quoted(pattern)
        ));
    }
    if pattern.contains(['[', ']']) {
        return Some(format!(
            "character range in {} is not supported",
            quoted(pattern)
        ));
    }
    None
}

fn owners_problem(owners: &[String]) -> Option<String> {
    owners.iter().find(|owner| !is_owner(owner)).map(|owner| {
        format!(
            "invalid owner {}: expected @user, @org/team or an email",
            quoted(owner)
        )
    })
}

fn is_owner(owner: &str) -> bool {
    match owner.strip_prefix('@') {
        Some(handle) => match handle.split_once('/') {
            Some((org, team)) => is_name(org) && is_team(team),
            None => is_name(handle),
        },
        None => is_email(owner),
    }
}

/// A GitHub user or organisation login: letters, digits and hyphens, not at either end
/// (underscores appear in managed-user logins).
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn is_team(team: &str) -> bool {
    !team.is_empty()
        && team
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_email(owner: &str) -> bool {
    let Some((local, domain)) = owner.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
        && owner.chars().all(|c| c.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(line: u32, pattern: &str, owners: &[&str]) -> CodeOwnersRule {
        CodeOwnersRule {
            line,
            pattern: pattern.to_owned(),
            owners: owners.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    #[test]
    fn codeowners_rules_keep_their_line_numbers_and_skip_comments_and_blanks() {
        let file = "# Owners of everything\n\n*       @global-owner1 @org/team-a\r\n  # indented comment\n/docs/  docs@example.com @Docs_Team  # trailing comment\ndocs/c#/ @user\n";
        let (rules, warnings) = parse_codeowners(file.as_bytes()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            rules,
            vec![
                rule(3, "*", &["@global-owner1", "@org/team-a"]),
                rule(5, "/docs/", &["docs@example.com", "@Docs_Team"]),
                rule(6, "docs/c#/", &["@user"]),
            ]
        );
    }

    #[test]
    fn codeowners_invalid_owner_lines_are_warnings_and_skipped() {
        let file = "*.js @ok\n*.rs someone\n*.go @bad/team/extra\n*.py @-dash\n*.c not-an-email@\n";
        let (rules, warnings) = parse_codeowners(file.as_bytes()).unwrap();
        assert_eq!(rules, vec![rule(1, "*.js", &["@ok"])]);
        assert_eq!(
            warnings.iter().map(|w| w.line).collect::<Vec<_>>(),
            [2, 3, 4, 5]
        );
        assert!(warnings[0].reason.contains("\"someone\""));
    }

    #[test]
    fn codeowners_negation_and_character_ranges_are_warnings_and_skipped() {
        let file = "!secret.txt @a\n*.[ch] @b\nsrc/ @c\n";
        let (rules, warnings) = parse_codeowners(file.as_bytes()).unwrap();
        assert_eq!(rules, vec![rule(3, "src/", &["@c"])]);
        assert_eq!(warnings.iter().map(|w| w.line).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn codeowners_escaped_hash_and_space_are_part_of_the_pattern() {
        let file = "\\#notes.md @a\ndocs/with\\ space.md @b\n";
        let (rules, warnings) = parse_codeowners(file.as_bytes()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            rules,
            vec![
                rule(1, "#notes.md", &["@a"]),
                rule(2, "docs/with space.md", &["@b"])
            ]
        );
    }

    #[test]
    fn codeowners_pattern_without_owners_is_kept_with_empty_owners() {
        let (rules, warnings) = parse_codeowners(b"* @all\n/generated/ # nobody\n").unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            rules,
            vec![rule(1, "*", &["@all"]), rule(2, "/generated/", &[])]
        );
    }

    #[test]
    fn codeowners_refuses_nul_and_invalid_utf8_and_strips_a_bom() {
        assert_eq!(parse_codeowners(b"* @a\0"), Err(ParseRefusal::NulByte));
        assert_eq!(parse_codeowners(b"* @\xff"), Err(ParseRefusal::InvalidUtf8));
        let (rules, _) = parse_codeowners("\u{feff}* @a\n".as_bytes()).unwrap();
        assert_eq!(rules, vec![rule(1, "*", &["@a"])]);
    }
}
