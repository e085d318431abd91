//! Operating directnfs: the live statistics of every process on the host
//! (`stats`, `top`, `exporter`), file system space (`df`), and the man
//! pages and completions the package ships (`generate`).

pub mod df;
pub mod exporter;
pub mod generate;
pub mod rates;
pub mod stats;
pub mod top;
