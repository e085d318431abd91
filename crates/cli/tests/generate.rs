//! `dnfs generate options`: the book's options page is the one the option
//! table in code makes. Needs no server.

mod common;

use common::{dnfs, Scratch};

/// The book's copy of the options page, relative to this crate.
const BOOK_PAGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/book/src/options.md"
);

#[test]
fn the_books_options_page_is_the_generated_one() {
    let scratch = Scratch::new("generate");
    let file = scratch.path("options.md");
    let out = dnfs(&["generate", "options", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = std::fs::read_to_string(&file).unwrap();
    assert!(generated.contains("| `connections` |"), "{generated}");
    let book = std::fs::read_to_string(BOOK_PAGE).unwrap();
    assert!(
        book == generated,
        "docs/book/src/options.md differs from the option table in code: run \
         `cargo run -p directnfs-cli -- generate options docs/book/src/options.md`"
    );
}
