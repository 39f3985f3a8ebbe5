//! Who owns a path by GitHub's CODEOWNERS rules ("About code owners"): gitignore-style patterns,
//! the last matching rule wins, and a matching rule without owners leaves the path unowned.
//!
//! Patterns: a leading `/` or a slash inside anchors a pattern at the repository root, otherwise it
//! matches at any depth; a trailing `/` matches directories only; a pattern that matches a
//! directory owns everything below it, except that a wildcard in the last segment matches files of
//! that one folder (GitHub's documented `docs/*`); `*` and `?` stay within one path segment, `**` spans any
//! number of segments. Matching is linear in the pattern and path lengths per segment pair, so a
//! hostile CODEOWNERS file cannot make it exponential.

use super::codeowners::CodeOwnersRule;

/// The rule that decides `path` (the last one that matches), if any.
pub fn deciding_rule<'r>(rules: &'r [CodeOwnersRule], path: &str) -> Option<&'r CodeOwnersRule> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() {
        return None;
    }
    rules
        .iter()
        .rev()
        .find(|rule| pattern_matches(&rule.pattern, &segments))
}

/// The owners of `path`: empty when no rule matches or the deciding rule has no owners.
pub fn owners_of<'r>(rules: &'r [CodeOwnersRule], path: &str) -> &'r [String] {
    deciding_rule(rules, path).map_or(&[], |rule| rule.owners.as_slice())
}

/// Whether `pattern` matches the file at `segments` or one of the folders above it.
fn pattern_matches(pattern: &str, segments: &[&str]) -> bool {
    let dir_only = pattern.ends_with('/');
    let trimmed = pattern.trim_end_matches('/');
    let anchored = trimmed.starts_with('/') || trimmed.contains('/');
    let trimmed = trimmed.trim_start_matches('/');
    if trimmed.is_empty() {
        return false;
    }
    let mut parts: Vec<&str> = Vec::new();
    if !anchored {
        parts.push("**");
    }
    parts.extend(trimmed.split('/').filter(|s| !s.is_empty()));
    // A folder (a proper prefix of the path) owns what is inside; the file itself only when the
    // pattern is not folder-only. A wildcard in the last segment names files in that folder only
    // (GitHub: `docs/*` owns docs/a.md, not docs/build-app/b.md).
    let leaf_wildcard = parts
        .last()
        .is_some_and(|p| *p != "**" && p.contains(['*', '?']));
    let first = if leaf_wildcard { segments.len() } else { 1 };
    let last = if dir_only {
        segments.len() - 1
    } else {
        segments.len()
    };
    (first..=last).any(|n| segments_match(&parts, &segments[..n]))
}

/// `parts` (with `**`) against whole path segments: dynamic programming over both lists.
fn segments_match(parts: &[&str], segments: &[&str]) -> bool {
    // reach[j]: the parts consumed so far can match exactly the first j segments.
    let mut reach = vec![false; segments.len() + 1];
    reach[0] = true;
    for part in parts {
        let mut next = vec![false; segments.len() + 1];
        if *part == "**" {
            let mut any = false;
            for j in 0..=segments.len() {
                any |= reach[j];
                next[j] = any;
            }
        } else {
            for j in 0..segments.len() {
                if reach[j] && glob_segment(part, segments[j]) {
                    next[j + 1] = true;
                }
            }
        }
        reach = next;
    }
    reach[segments.len()]
}

/// One segment against a glob of `*` and `?`, with the usual single-backtrack-point algorithm
/// (linear per star).
fn glob_segment(glob: &str, text: &str) -> bool {
    let g: Vec<char> = glob.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut gi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ti));
                gi += 1;
            }
            Some(c) if *c == '?' || *c == t[ti] => {
                gi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sg, st)) => {
                    gi = sg + 1;
                    ti = st + 1;
                    star = Some((sg, st + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::super::codeowners::parse_codeowners;
    use super::*;

    /// The example file of GitHub's "About code owners", rule for rule (in its order).
    const GITHUB_EXAMPLE: &str = "\
* @global-owner1 @global-owner2
*.js @js-owner
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/* docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
";

    fn owners(file: &str, path: &str) -> Vec<String> {
        let (rules, warnings) = parse_codeowners(file.as_bytes()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        owners_of(&rules, path).to_vec()
    }

    /// Each rule of the example in isolation, against the paths GitHub's comments name.
    #[test]
    fn codeowners_matches_githubs_documented_examples_rule_by_rule() {
        let table: &[(&str, &str, bool)] = &[
            // "These owners will be the default owners for everything in the repo."
            ("* @o", "README.md", true),
            ("* @o", "src/deep/file.rs", true),
            // "*.js": any JavaScript file, at any depth.
            ("*.js @o", "app.js", true),
            ("*.js @o", "web/lib/app.js", true),
            ("*.js @o", "app.jsx", false),
            // "/build/logs/": build/logs at the root and any of its subdirectories.
            ("/build/logs/ @o", "build/logs/a.log", true),
            ("/build/logs/ @o", "build/logs/2026/a.log", true),
            ("/build/logs/ @o", "src/build/logs/a.log", false),
            ("/build/logs/ @o", "build/logs", false),
            // "docs/*" matches docs/getting-started.md, not docs/build-app/troubleshooting.md.
            ("docs/* @o", "docs/getting-started.md", true),
            ("docs/* @o", "docs/build-app/troubleshooting.md", false),
            // "apps/": any apps directory anywhere in the repository.
            ("apps/ @o", "apps/web/index.ts", true),
            ("apps/ @o", "src/apps/web/index.ts", true),
            ("apps/ @o", "apps", false),
            // "/docs/": the docs directory at the root and any of its subdirectories.
            ("/docs/ @o", "docs/a.md", true),
            ("/docs/ @o", "docs/guides/b.md", true),
            ("/docs/ @o", "src/docs/a.md", false),
            // "**/logs": any logs directory, such as /build/logs, /scripts/logs, /deeply/nested/logs.
            ("**/logs @o", "build/logs/a.log", true),
            ("**/logs @o", "scripts/logs/a.log", true),
            ("**/logs @o", "deeply/nested/logs/a.log", true),
            ("**/logs @o", "logs/a.log", true),
            ("**/logs @o", "catalogs/a.log", false),
        ];
        for (file, path, owned) in table {
            assert_eq!(
                !owners(file, path).is_empty(),
                *owned,
                "{file:?} on {path:?}"
            );
        }
    }

    /// The whole example file: the last matching rule wins, and `/apps/github` without owners
    /// un-owns what `/apps/` gave to @octocat.
    #[test]
    fn codeowners_last_matching_rule_wins_in_githubs_example_file() {
        let table: &[(&str, &[&str])] = &[
            ("README.md", &["@global-owner1", "@global-owner2"]),
            ("web/app.js", &["@js-owner"]),
            ("cmd/main.go", &["docs@example.com"]),
            ("notes/todo.txt", &["@octo-org/octocats"]),
            ("build/logs/today.log", &["@octocat"]), // **/logs is later than /build/logs/
            ("docs/getting-started.md", &["@doctocat"]), // /docs/ is later than docs/*
            ("docs/build-app/troubleshooting.md", &["@doctocat"]),
            ("scripts/deploy.sh", &["@doctocat", "@octocat"]),
            ("scripts/logs/run.log", &["@octocat"]),
            ("apps/web/index.ts", &["@octocat"]),
            ("apps/github/index.ts", &[]),
            ("apps/github", &[]),
            ("src/apps/x.js", &["@octocat"]), // apps/ (anywhere) is later than *.js
        ];
        for (path, expected) in table {
            assert_eq!(owners(GITHUB_EXAMPLE, path), *expected, "{path}");
        }
    }

    #[test]
    fn codeowners_an_owned_subfolder_overrides_its_parent() {
        let file = "/apps/ @octocat\n/apps/github @doctocat\n";
        assert_eq!(owners(file, "apps/github/a.rb"), ["@doctocat"]);
        assert_eq!(owners(file, "apps/other/a.rb"), ["@octocat"]);
    }

    #[test]
    fn codeowners_wildcards_stay_within_a_segment_and_question_marks_take_one_character() {
        assert!(owners("docs/*.md @o", "docs/a/b.md").is_empty());
        assert_eq!(owners("docs/**/*.md @o", "docs/a/b/c.md"), ["@o"]);
        assert_eq!(owners("docs/**/*.md @o", "docs/c.md"), ["@o"]);
        assert_eq!(owners("v?.md @o", "v1.md"), ["@o"]);
        assert!(owners("v?.md @o", "v10.md").is_empty());
        assert!(owners("* @o", "").is_empty(), "an empty path has no owners");
    }

    #[test]
    fn codeowners_hostile_patterns_finish() {
        // A backtracking matcher takes exponential time on these; this one answers at once.
        let pattern = format!("{}b @o", "*a".repeat(50));
        assert!(owners(&pattern, &"a".repeat(200)).is_empty());
        let deep = format!("{} @o", "**/".repeat(40) + "x");
        assert!(owners(&deep, &["d"; 200].join("/")).is_empty());
    }
}
