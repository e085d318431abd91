//! SQLite VFS `directnfs` (loadable extension) — work in progress.
