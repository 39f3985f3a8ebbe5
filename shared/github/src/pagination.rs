//! GitHub pagination: the `Link` header's `rel="next"` target.

/// The `rel="next"` URL of a `Link` header (RFC 8288), if any.
///
/// `<https://api.github.com/installation/repositories?page=2>; rel="next", <...>; rel="last"`.
/// Parsed by hand rather than split on commas, because a URL may itself contain a comma.
pub(crate) fn next_link(header: &str) -> Option<String> {
    let mut rest = header;
    loop {
        let start = rest.find('<')?;
        let after_start = &rest[start + 1..];
        let end = after_start.find('>')?;
        let target = &after_start[..end];
        let params_and_more = &after_start[end + 1..];
        // Parameters run until the next link value starts.
        let params_end = params_and_more.find('<').unwrap_or(params_and_more.len());
        let params = &params_and_more[..params_end];
        if params
            .split(';')
            .filter_map(|p| p.split_once('='))
            .any(|(k, v)| {
                k.trim().eq_ignore_ascii_case("rel")
                    && v.trim()
                        .trim_end_matches(',')
                        .trim()
                        .trim_matches('"')
                        .split_ascii_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("next"))
            })
        {
            return Some(target.to_owned());
        }
        rest = &params_and_more[params_end..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_found_among_the_relations() {
        let h = r#"<https://api.github.com/installation/repositories?per_page=100&page=2>; rel="next", <https://api.github.com/installation/repositories?per_page=100&page=3>; rel="last""#;
        assert_eq!(
            next_link(h).as_deref(),
            Some("https://api.github.com/installation/repositories?per_page=100&page=2")
        );
    }

    #[test]
    fn next_may_come_last_and_unquoted() {
        let h = r#"<http://h/x?page=1>; rel="first", <http://h/x?page=1>; rel="prev", <http://h/x?page=3>; rel=next"#;
        assert_eq!(next_link(h).as_deref(), Some("http://h/x?page=3"));
    }

    #[test]
    fn the_last_page_has_no_next() {
        let h = r#"<http://h/x?page=1>; rel="first", <http://h/x?page=2>; rel="prev""#;
        assert_eq!(next_link(h), None);
        assert_eq!(next_link(""), None);
        assert_eq!(next_link("garbage"), None);
        assert_eq!(next_link("<unterminated; rel=\"next\""), None);
    }

    #[test]
    fn a_comma_inside_a_url_does_not_split_it() {
        let h = r#"<http://h/x?q=a,b&page=2>; rel="next""#;
        assert_eq!(next_link(h).as_deref(), Some("http://h/x?q=a,b&page=2"));
    }

    #[test]
    fn several_relations_in_one_value() {
        let h = r#"<http://h/x?page=2>; rel="last next""#;
        assert_eq!(next_link(h).as_deref(), Some("http://h/x?page=2"));
    }
}
