use std::path::PathBuf;

use engram_base::db::embedded::EmbeddedPostgres;
use sqlx::{ConnectOptions, Connection};

fn pg_bin() -> PathBuf {
    std::env::var_os("ENGRAM_TEST_PG_BIN").map(PathBuf::from).expect("ENGRAM_TEST_PG_BIN is set by scripts/test")
}

#[tokio::test]
async fn the_embedded_database_keeps_its_data_across_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let server = EmbeddedPostgres::start(home.path(), Some(&pg_bin()), "128MB").await.unwrap();
    server.create_database("engram").await.unwrap();
    let mut conn = server.connect_options("engram").connect().await.unwrap();
    sqlx::raw_sql("CREATE TABLE kept (note text); INSERT INTO kept VALUES ('survives')")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();

    // A second process finds it running through the state file and attaches.
    let attached = EmbeddedPostgres::start(home.path(), Some(&pg_bin()), "128MB").await.unwrap();
    assert_eq!(attached.port(), server.port());
    attached.stop().await;
    let still_up =
        server.connect_options("engram").connect().await.expect("an attached process leaves the server running");
    still_up.close().await.unwrap();

    let old_port = server.port();
    server.stop().await;
    assert!(server_is_down(old_port).await, "the process that started the server stops it");

    let restarted = EmbeddedPostgres::start(home.path(), Some(&pg_bin()), "128MB").await.unwrap();
    let mut conn = restarted.connect_options("engram").connect().await.unwrap();
    let note: String = sqlx::query_scalar("SELECT note FROM kept").fetch_one(&mut conn).await.unwrap();
    assert_eq!(note, "survives");
    conn.close().await.unwrap();
    restarted.stop().await;
}

#[tokio::test]
async fn missing_binaries_name_the_command_that_installs_them() {
    let home = tempfile::tempdir().unwrap();

    let err = EmbeddedPostgres::start(home.path(), Some(&home.path().join("nowhere")), "128MB").await.err().unwrap();

    assert!(err.to_string().contains("scripts/bootstrap"), "{err}");
}

async fn server_is_down(port: u16) -> bool {
    tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err()
}
