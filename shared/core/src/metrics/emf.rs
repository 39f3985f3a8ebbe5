//! The Embedded Metric Format's numbers the emitter keeps by construction (and `testing`'s
//! validator checks): one place for each.

/// Metric definitions one directive may hold (EMF specification).
pub const MAX_METRICS_PER_DIRECTIVE: usize = 100;
/// Dimension values are at most 1024 characters.
pub(crate) const MAX_DIMENSION_VALUE_CHARS: usize = 1024;
/// The dimension every record carries.
pub const TENANT: &str = "Tenant";
