//! GPU bandwidth of the device primitives, for the side-by-side scripts in `benches/scripts/`: one
//! executable (each embeds the PTX) with a subcommand per primitive.
//!
//! Usage: bandwidth <reduce | scan | scan-variants | scan-timeline[-specialized] | select | segmented | multi | sort | sort-once> [MAX_LOG2 (default 28)]

mod histogram;
mod multi;
mod reduce;
mod scan;
mod segmented;
mod select;
mod sort;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let max_log2: u32 = args.get(1).map(|a| a.parse().expect("MAX_LOG2 must be an integer")).unwrap_or(28);
    match args.first().map(String::as_str) {
        Some("histogram") => histogram::run(max_log2),
        Some("reduce") => reduce::run(max_log2),
        Some("scan") => scan::run(max_log2),
        Some("scan-variants") => scan::variants(max_log2),
        Some("scan-timeline") => scan::timeline(max_log2, false),
        Some("scan-timeline-specialized") => scan::timeline(max_log2, true),
        Some("select") => select::run(max_log2),
        Some("segmented") => segmented::run(max_log2),
        Some("multi") => multi::run(max_log2),
        Some("sort") => sort::run(max_log2),
        Some("sort-once") => sort::once(max_log2),
        _ => {
            eprintln!(
                "usage: bandwidth <reduce | scan | scan-variants | select | segmented | multi | sort | sort-once> [MAX_LOG2]"
            );
            std::process::exit(2);
        }
    }
}
