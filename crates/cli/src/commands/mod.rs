//! One module per command. Each takes its parsed arguments and the
//! [`Resolver`](crate::location::Resolver) and writes to stdout.

pub mod cat;
pub mod cp;
pub mod ls;
pub mod namespace;
pub mod run;
pub mod stat;
