//! Rebuilds when a migration is added or changed: `sqlx::migrate!` embeds the
//! repository's `migrations/`.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
