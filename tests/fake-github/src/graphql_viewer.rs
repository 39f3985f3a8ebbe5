//! `viewer` for an installation token: the App's bot user, whose `repositories` connection lists
//! the installation's repositories (GitHub does not document this; atlassian/github-for-jira
//! relies on it). The connection follows GitHub's published schema (octokit/graphql-schema):
//! `User.repositories(first, after, ownerAffiliations = [OWNER, COLLABORATOR], ...)` returns a
//! `RepositoryConnection` with `nodes`, `pageInfo` and `totalCount`; `first` over 100 is
//! refused as GitHub refuses it (`EXCESSIVE_PAGINATION`, the whole query `data: null`), and a
//! connection asked without `first` or `last` is `MISSING_PAGINATION_BOUNDARIES`.
//!
//! For the fallback test, the fake can be told to leave repositories out of this listing
//! ([`super::FakeGithub::hide_from_viewer_listing`]): its `totalCount` then counts only what it
//! lists, as a listing that is wrong (not merely cut short) would.

use std::sync::Arc;

use async_graphql::{Context, Enum, Object, SimpleObject};

use super::Shared;
use super::graphql::{Repository, Viewer, typed};

/// GitHub's most records per connection page.
const MAX_PAGE: i32 = 100;

/// The bot user an installation token acts as.
pub(crate) struct User {
    installation: u64,
}

impl User {
    pub(crate) fn of(installation: u64) -> Self {
        Self { installation }
    }
}

/// The viewer's affiliation with a repository (GitHub's `RepositoryAffiliation`).
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(rename_items = "SCREAMING_SNAKE_CASE")]
pub(crate) enum RepositoryAffiliation {
    Owner,
    Collaborator,
    OrganizationMember,
}

#[derive(SimpleObject)]
pub(crate) struct PageInfo {
    has_next_page: bool,
    has_previous_page: bool,
    end_cursor: Option<String>,
    start_cursor: Option<String>,
}

#[derive(SimpleObject)]
pub(crate) struct RepositoryConnection {
    nodes: Option<Vec<Option<Repository>>>,
    page_info: PageInfo,
    total_count: i32,
}

/// An opaque cursor after the repository with this id (listing order is id order).
fn cursor(id: u64) -> String {
    hex::encode(format!("cursor:v2:{id}"))
}

fn after_id(cursor: &str) -> Option<u64> {
    let text = String::from_utf8(hex::decode(cursor).ok()?).ok()?;
    text.strip_prefix("cursor:v2:")?.parse().ok()
}

#[Object]
impl User {
    async fn login(&self) -> String {
        "syncplane-fake[bot]".to_owned()
    }

    /// A list of repositories that the user owns: for the App's bot, the installation's.
    async fn repositories(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        #[graphql(
            default_with = "Some(vec![Some(RepositoryAffiliation::Owner), Some(RepositoryAffiliation::Collaborator)])"
        )]
        owner_affiliations: Option<Vec<Option<RepositoryAffiliation>>>,
    ) -> async_graphql::Result<RepositoryConnection> {
        let _ = owner_affiliations;
        let Some(first) = first else {
            return Err(typed(
                "You must provide a `first` or `last` value to properly paginate the `repositories` connection.".into(),
                "MISSING_PAGINATION_BOUNDARIES",
            ));
        };
        if !(0..=MAX_PAGE).contains(&first) {
            return Err(typed(
                format!(
                    "Requesting {first} records on the `repositories` connection exceeds the `first` limit of {MAX_PAGE} records."
                ),
                "EXCESSIVE_PAGINATION",
            ));
        }
        let start = match after.as_deref() {
            None => None,
            Some(c) => Some(after_id(c).ok_or_else(|| {
                typed(
                    format!("`{c}` does not appear to be a valid cursor."),
                    "INVALID_CURSOR_ARGUMENTS",
                )
            })?),
        };
        let shared = ctx.data_unchecked::<Arc<Shared>>();
        let installation = ctx.data_unchecked::<Viewer>().installation;
        debug_assert_eq!(installation, self.installation);
        let state = shared.lock();
        let listed: Vec<_> = state
            .repos
            .values()
            .filter(|r| !r.deleted && r.installation_id == Some(self.installation))
            .filter(|r| !state.viewer_hides.contains(&r.id))
            .collect();
        let page: Vec<_> = listed
            .iter()
            .filter(|r| start.is_none_or(|s| r.id > s))
            .take(first as usize)
            .collect();
        let has_next_page = page
            .last()
            .is_some_and(|last| listed.iter().any(|r| r.id > last.id));
        Ok(RepositoryConnection {
            page_info: PageInfo {
                has_next_page,
                has_previous_page: start.is_some(),
                end_cursor: page.last().map(|r| cursor(r.id)),
                start_cursor: page.first().map(|r| cursor(r.id)),
            },
            nodes: Some(page.iter().map(|r| Some(Repository::of(r))).collect()),
            total_count: i32::try_from(listed.len()).unwrap_or(i32::MAX),
        })
    }
}
