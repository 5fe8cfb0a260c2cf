//! The little-endian reader of the library's binary files (checkpoints,
//! archive records and their sections).

/// Little-endian reads from a buffer whose length was checked beforehand
/// (checkpoints and archive records).
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Reads `bytes` from offset `at` on.
    pub(crate) fn new(bytes: &'a [u8], at: usize) -> Reader<'a> {
        Reader { bytes, at }
    }
    pub(crate) fn take(&mut self, k: usize) -> &'a [u8] {
        let s = &self.bytes[self.at..self.at + k];
        self.at += k;
        s
    }
    pub(crate) fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }
    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }
    pub(crate) fn f32(&mut self) -> f32 {
        f32::from_bits(self.u32())
    }
}
