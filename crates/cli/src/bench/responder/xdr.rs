//! The few XDR reads and writes the benchmark responder needs. A read past
//! the end of the record is an error (`None`), never a panic: the caller then
//! closes the connection.

/// Reads big-endian XDR items from one RPC record.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn u32(&mut self) -> Option<u32> {
        let b = self.buf.get(self.pos..self.pos.checked_add(4)?)?;
        self.pos += 4;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Option<u64> {
        let hi = self.u32()? as u64;
        let lo = self.u32()? as u64;
        Some(hi << 32 | lo)
    }

    /// Variable-length opaque or string of at most `max` bytes (padded to 4).
    pub fn opaque(&mut self, max: usize) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        if len > max {
            return None;
        }
        let padded = len.checked_add(3)? & !3;
        let b = self.buf.get(self.pos..self.pos.checked_add(padded)?)?;
        self.pos += padded;
        Some(&b[..len])
    }
}

/// Appends big-endian XDR items to a reply buffer.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_opaque(out: &mut Vec<u8>, data: &[u8]) {
    put_u32(out, data.len() as u32);
    out.extend_from_slice(data);
    out.resize(out.len() + ((4 - data.len() % 4) % 4), 0);
}
