//! Lists the files of the repository's `console/` for `src/http/console.rs` to compile in.
use std::path::Path;

fn main() {
    // Read when the script runs, not when it was compiled: a target directory shared by
    // two checkouts reuses the compiled script.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("../../console");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the console directory exists")
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    names.sort();
    let entries: String = names
        .iter()
        .map(|name| format!("    ({name:?}, include_str!({:?})),\n", dir.join(name).display().to_string()))
        .collect();
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("console_files.rs");
    std::fs::write(out, format!("&[\n{entries}]\n")).expect("OUT_DIR is writable");
}
