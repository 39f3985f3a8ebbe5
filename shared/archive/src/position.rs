//! A file's position (contract "Identity and offsets"): its generation and acknowledged offset,
//! and the rule a segment must keep to continue it.

/// A file's position: its generation and acknowledged offset (`{0, 0}` for an unknown file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileState {
    pub generation: u32,
    pub acked_offset: u64,
}

impl FileState {
    /// Whether a segment of `generation` starting at `offset` continues this file: the same
    /// generation at the acknowledged offset, or a newer generation at 0.
    pub fn accepts(&self, generation: u32, offset: u64) -> bool {
        (generation == self.generation && offset == self.acked_offset)
            || (generation > self.generation && offset == 0)
    }

    /// From the database's columns.
    pub(super) fn of(generation: i32, acked_offset: i64) -> Self {
        Self {
            generation: u32::try_from(generation).unwrap_or(0),
            acked_offset: u64::try_from(acked_offset).unwrap_or(0),
        }
    }
}
