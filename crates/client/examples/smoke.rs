//! Quick manual check: `cargo run --example smoke -- nfs://...`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or("usage: smoke URL")?;
    let c = directnfs::Client::connect(&url)?;
    println!(
        "export {} rest {} limits {:?}",
        c.export(),
        c.target_path(),
        c.limits()
    );
    let f = c.create("/smoke.bin")?;
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    f.write_at(&data, 0)?;
    let mut back = vec![0u8; data.len() + 100];
    let n = f.read_at(&mut back, 0)?;
    println!("read {n} eq {}", back[..n] == data[..]);
    println!("{:?}", c.metadata("/smoke.bin")?);
    for e in c.read_dir("/")? {
        println!("{} {:?}", e.name, e.metadata.map(|m| m.size));
    }
    c.remove("/smoke.bin")?;
    println!("{:?}", c.metadata("/smoke.bin").unwrap_err().to_string());
    Ok(())
}
