//! Who may sync and who may read: device and read tokens ([`tokens`], one module by kind, with
//! the checks the ingest function makes), the orgs, users and compute targets they belong to and
//! the org's policy, gates and retention ([`provision`], as the operator CLI and the tests set
//! them), whether an org may archive transcripts now ([`gates`]), and the migrate function's
//! `provision` action ([`admin`]: the same provisioning, from inside the VPC, in one
//! transaction). One error type for a token check ([`AccountsError`]); each surface maps it.
//!
//! Uses the floor (`syncplane_core`) and nothing else of the workspace.

pub mod admin;
mod error;
pub mod gates;
mod kind;
pub mod provision;
pub mod tokens;

pub use error::AccountsError;
