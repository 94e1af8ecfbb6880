//! How one call through a breaker ended.

/// How one call through the breaker ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The dependency answered well.
    Success,
    /// Evidence that the dependency is sick: a counted error, a panic, a timeout.
    Failure,
    /// Neither: an error that is the caller's fault, or a call abandoned before it
    /// finished. Moves no counter, but gives back a half-open trial permit.
    Neutral,
}
