//! The fake's world: installations, repositories with their git objects, issued tokens, the
//! rate-limit budget, armed faults and the request log. Guarded by one mutex, never held
//! across an await.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::faults::FaultRule;
use super::git::{self, Commit, FileEntry, ObjectStore, Oid, Signature};
use super::graphql::GraphqlFaultRule;
use super::{Change, Endpoint, LoggedRequest};

pub(crate) struct Installation {
    pub id: u64,
    pub account: String,
    pub created_at: DateTime<Utc>,
    pub suspended_at: Option<DateTime<Utc>>,
    pub deleted: bool,
}

pub(crate) struct Repo {
    pub id: u64,
    pub owner: String,
    pub name: String,
    /// None once removed from its installation.
    pub installation_id: Option<u64>,
    pub private: bool,
    pub archived: bool,
    pub deleted: bool,
    pub description: Option<String>,
    pub default_branch: String,
    pub branches: BTreeMap<String, Oid>,
    pub objects: ObjectStore,
    pub created_at: DateTime<Utc>,
    pub pushed_at: Option<DateTime<Utc>>,
    pub commits: u64,
    pub size_bytes: u64,
}

impl Repo {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    pub fn head(&self) -> Option<Oid> {
        self.branches.get(&self.default_branch).copied()
    }

    pub fn commit(&self, oid: &Oid) -> Option<&Commit> {
        match self.objects.get(oid) {
            Some(git::Object::Commit(commit)) => Some(commit),
            _ => None,
        }
    }

    /// Applies `changes` on top of the default branch and moves it to a new commit whose
    /// parent is the previous head (none for the first commit of an empty repository).
    pub fn push(&mut self, changes: &[Change], message: Option<&str>, now: DateTime<Utc>) -> Oid {
        let parent = self.head();
        let mut files = match parent.and_then(|p| self.commit(&p).map(|c| c.tree)) {
            Some(tree) => self.objects.files_of(&tree),
            None => BTreeMap::new(),
        };
        for change in changes {
            match change {
                Change::Put(path, data) => {
                    files.insert(path.clone(), FileEntry::Regular(data.clone()));
                }
                Change::Executable(path, data) => {
                    files.insert(path.clone(), FileEntry::Executable(data.clone()));
                }
                Change::Symlink(path, target) => {
                    files.insert(path.clone(), FileEntry::Symlink(target.clone()));
                }
                Change::Submodule(path, sha) => {
                    let oid = git::from_hex(sha)
                        .unwrap_or_else(|| panic!("fake GitHub: submodule sha {sha:?} is not hex"));
                    files.insert(path.clone(), FileEntry::Submodule(oid));
                }
                Change::Delete(path) => {
                    // Deleting a folder deletes everything below it.
                    let prefix = format!("{path}/");
                    files.retain(|p, _| p != path && !p.starts_with(&prefix));
                }
            }
        }
        self.size_bytes = files
            .values()
            .map(|f| match f {
                FileEntry::Regular(d) | FileEntry::Executable(d) => d.len() as u64,
                FileEntry::Symlink(t) => t.len() as u64,
                FileEntry::Submodule(_) => 0,
            })
            .sum();
        let tree = self.objects.write_tree(&files);
        self.commits += 1;
        let who = Signature {
            name: "Fake Pusher".to_owned(),
            email: "pusher@example.com".to_owned(),
            time: now.timestamp(),
        };
        let commit = self.objects.write_commit(Commit {
            tree,
            parent,
            author: who.clone(),
            committer: who,
            message: message.map_or_else(|| format!("Push {}", self.commits), str::to_owned),
        });
        self.branches.insert(self.default_branch.clone(), commit);
        self.pushed_at = Some(now);
        commit
    }
}

pub(crate) struct IssuedToken {
    pub installation_id: u64,
    pub expires_at: DateTime<Utc>,
}

/// The core rate-limit budget (one for the whole fake).
pub(crate) struct RateBudget {
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds.
    pub reset_at: i64,
}

impl RateBudget {
    /// Once the reset time has passed, the window starts again with a full budget.
    pub fn refresh(&mut self, now: i64) {
        if now >= self.reset_at {
            self.remaining = self.limit;
            self.reset_at = now + 3600;
        }
    }
}

pub(crate) struct State {
    pub app_id: u64,
    pub base_url: String,
    pub installations: BTreeMap<u64, Installation>,
    /// Keyed by GitHub id: listing order is id order.
    pub repos: BTreeMap<u64, Repo>,
    pub tokens: HashMap<String, IssuedToken>,
    pub next_installation_id: u64,
    pub next_repo_id: u64,
    pub tree_truncation: Option<usize>,
    pub latency: Duration,
    pub token_ttl: Duration,
    pub rate: RateBudget,
    /// GraphQL's points budget: its own, like GitHub's.
    pub graphql_rate: RateBudget,
    /// Seconds the rate-limit clock ([`State::rate_now`]) runs ahead of the wall clock: a test
    /// moves it past a reset instead of sleeping through one (issue 21 point 21).
    pub rate_clock_ahead: i64,
    pub faults: Vec<FaultRule>,
    pub graphql_faults: Vec<GraphqlFaultRule>,
    /// Repositories `viewer.repositories` leaves out (an incomplete listing on demand).
    pub viewer_hides: std::collections::BTreeSet<u64>,
    pub log: Vec<LoggedRequest>,
    /// Requests being answered now, and the most seen at once since the last log reset, per
    /// endpoint: tests prove that two syncs of a repository never overlapped.
    pub in_flight: HashMap<Endpoint, usize>,
    pub max_in_flight: HashMap<Endpoint, usize>,
}

impl State {
    pub fn new(app_id: u64, now: i64) -> State {
        State {
            app_id,
            base_url: String::new(),
            installations: BTreeMap::new(),
            repos: BTreeMap::new(),
            tokens: HashMap::new(),
            next_installation_id: 40_000_000 + app_id % 1000 * 1000,
            next_repo_id: 700_000_000,
            tree_truncation: None,
            latency: Duration::ZERO,
            token_ttl: Duration::from_secs(3600),
            rate: RateBudget {
                limit: 5000,
                remaining: 5000,
                reset_at: now + 3600,
            },
            graphql_rate: RateBudget {
                limit: 5000,
                remaining: 5000,
                reset_at: now + 3600,
            },
            rate_clock_ahead: 0,
            faults: Vec::new(),
            graphql_faults: Vec::new(),
            viewer_hides: Default::default(),
            log: Vec::new(),
            in_flight: HashMap::new(),
            max_in_flight: HashMap::new(),
        }
    }

    /// The instant (unix seconds) the rate-limit budgets are kept by: the `now` every
    /// [`RateBudget::refresh`], reset header and rate-limit fault is computed from.
    pub fn rate_now(&self) -> i64 {
        Utc::now().timestamp() + self.rate_clock_ahead
    }

    /// A live repository by "owner/name" (GitHub matches names case-insensitively).
    pub fn repo_id(&self, owner: &str, name: &str) -> Option<u64> {
        self.repos
            .values()
            .find(|r| {
                !r.deleted
                    && r.owner.eq_ignore_ascii_case(owner)
                    && r.name.eq_ignore_ascii_case(name)
            })
            .map(|r| r.id)
    }

    /// The setup API addresses repositories by full name; a typo there is a test bug.
    pub fn repo_mut(&mut self, full_name: &str) -> &mut Repo {
        let (owner, name) = split_full_name(full_name);
        let id = self
            .repo_id(owner, name)
            .unwrap_or_else(|| panic!("fake GitHub: no repository {full_name}"));
        self.repos.get_mut(&id).expect("id just found")
    }

    pub fn installation_mut(&mut self, id: u64) -> &mut Installation {
        self.installations
            .get_mut(&id)
            .unwrap_or_else(|| panic!("fake GitHub: no installation {id}"))
    }
}

pub(crate) fn split_full_name(full_name: &str) -> (&str, &str) {
    full_name
        .split_once('/')
        .unwrap_or_else(|| panic!("fake GitHub: {full_name:?} is not owner/name"))
}
