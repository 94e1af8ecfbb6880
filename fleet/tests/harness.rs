//! The test server harness itself: a server per test, reachable, and gone on drop.

mod support;

use support::RedisServer;

#[test]
fn each_server_answers_and_is_killed_on_drop() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    assert_ne!(a.port, b.port);
    let port = a.port;
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    drop(a);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "server still listening after drop"
    );
    drop(b);
}
