//! Test support shared by the crate's unit tests: the property runner for hostile input.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// Cases per property in the normal test run; `PROPTEST_CASES` raises it (scripts/fuzz.sh).
const DEFAULT_CASES: u32 = 10;
/// The fixed seed: every run of the suite tries the same cases (`PROPTEST_RNG_SEED`, a number,
/// picks another for a longer exploration).
const SEED: [u8; 32] = *b"syncplane hostile input, seed 1.";

fn seed() -> [u8; 32] {
    match std::env::var("PROPTEST_RNG_SEED").map(|seed| seed.parse::<u64>()) {
        Ok(Ok(seed)) => {
            let mut bytes = SEED;
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            bytes
        }
        _ => SEED,
    }
}

/// Runs `property` on values of `strategy` drawn from the fixed seed, panicking with the
/// (shrunk) failing case.
pub fn check_property<S: Strategy>(
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed());
    let mut runner = TestRunner::new_with_rng(config, rng);
    if let Err(failure) = runner.run(&strategy, property) {
        panic!("{failure}");
    }
}
