//! Lookup connections lent and given back (`engram_base::db::lend`).

use std::time::Duration;

use engram_base::db::lend::LendingPool;
use sqlx::PgConnection;

use crate::helpers::fresh_database;

async fn backend(conn: &mut PgConnection) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(conn).await.unwrap()
}

#[tokio::test]
async fn a_connection_given_back_is_lent_again_as_it_is_and_one_dropped_goes_back_to_sqlx() {
    let (_db, url) = fresh_database().await;
    let lending = LendingPool::new(engram_base::db::pool_options(2).connect_lazy(&url).unwrap(), 2);

    let mut first = lending.acquire().await.unwrap();
    let pid = backend(&mut first).await;
    first.give_back();
    assert_eq!(lending.idle(), 1);
    let mut again = lending.acquire().await.unwrap();
    assert_eq!(backend(&mut again).await, pid, "the connection given back is lent again");
    assert_eq!(lending.idle(), 0);
    drop(again);
    assert_eq!(lending.idle(), 0, "a dropped connection is not set aside");

    // A connection set aside for over a second is pinged, and lent if it answers.
    let mut idle = lending.acquire().await.unwrap();
    let pid = backend(&mut idle).await;
    idle.give_back();
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let mut pinged = lending.acquire().await.unwrap();
    assert_eq!(backend(&mut pinged).await, pid);
    pinged.give_back();
}

#[tokio::test]
async fn a_borrower_beyond_the_pools_size_waits_for_a_connection_given_back() {
    let (_db, url) = fresh_database().await;
    let lending = LendingPool::new(engram_base::db::pool_options(2).connect_lazy(&url).unwrap(), 2);
    let (mut a, mut b) = (lending.acquire().await.unwrap(), lending.acquire().await.unwrap());
    backend(&mut a).await;
    backend(&mut b).await;

    let waiting = tokio::time::timeout(Duration::from_millis(300), lending.acquire()).await;
    assert!(waiting.is_err(), "a third borrower of a pool of two waits");
    a.give_back();
    let mut third = tokio::time::timeout(Duration::from_secs(5), lending.acquire())
        .await
        .expect("the connection given back is lent to the one waiting")
        .unwrap();
    backend(&mut third).await;
    // Both given back and one dropped: the pool lends two again, one from sqlx.
    third.give_back();
    drop(b);
    let (mut c, mut d) = (lending.acquire().await.unwrap(), lending.acquire().await.unwrap());
    assert_ne!(backend(&mut c).await, backend(&mut d).await);
}
