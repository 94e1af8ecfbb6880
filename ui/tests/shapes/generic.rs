use std::fmt::Display;

use failfast::circuit_breaker;

#[derive(Debug)]
pub struct DependencyError;

impl From<failfast::Rejected> for DependencyError {
    fn from(_: failfast::Rejected) -> Self {
        DependencyError
    }
}

// One breaker for every instantiation: it guards the dependency, not a type.
#[circuit_breaker(threshold = 3)]
fn render<T: Display, const N: usize>(items: [T; N]) -> Result<String, DependencyError> {
    Ok(items.iter().map(ToString::to_string).collect())
}

#[circuit_breaker]
async fn send<T>(payload: T) -> Result<T, DependencyError>
where
    T: Send + 'static,
{
    Ok(payload)
}

pub struct Repo<T>(Vec<T>);

impl<T: Clone> Repo<T> {
    #[circuit_breaker]
    fn first(&self) -> Result<T, DependencyError> {
        self.0.first().cloned().ok_or(DependencyError)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn main() {
    assert_eq!(render([1, 2]).unwrap(), "12");
    assert_eq!(render(["a"]).unwrap(), "a");
    assert_eq!(send(5u8).await.unwrap(), 5);
    assert_eq!(Repo(vec!['x']).first().unwrap(), 'x');
}
