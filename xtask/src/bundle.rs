//! placeholder replaced below
pub fn run() -> anyhow::Result<()> { anyhow::bail!("not yet") }
