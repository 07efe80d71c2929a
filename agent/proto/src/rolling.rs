//! The weak checksum of delta transfers, defined once because both sides must compute
//! the same number: the agent over each block of the old file, the controller over a
//! window that slides one byte at a time through the new file.
//!
//! Two 16-bit sums over the window `x[0..n]`: `a = Σ x[i]` and `b = Σ (n - i)·x[i]`, both
//! mod 2^16, packed as `b << 16 | a`. Sliding by one byte (drop `out`, take `in`) is
//! `a += in - out`, `b += a_new - n·out`: constant work per byte, whatever the block size.

/// The checksum of a window, able to slide over the data one byte at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rolling {
    a: u32,
    b: u32,
    len: u32,
}

impl Rolling {
    /// The checksum of `window`.
    pub fn new(window: &[u8]) -> Rolling {
        let len = window.len() as u32;
        let (mut a, mut b) = (0u32, 0u32);
        for (i, &x) in window.iter().enumerate() {
            a = a.wrapping_add(x as u32);
            b = b.wrapping_add((len - i as u32).wrapping_mul(x as u32));
        }
        Rolling {
            a: a & 0xffff,
            b: b & 0xffff,
            len,
        }
    }

    /// Moves the window one byte on: `out` leaves at the front, `incoming` joins at the end.
    pub fn roll(&mut self, out: u8, incoming: u8) {
        self.a = self
            .a
            .wrapping_sub(out as u32)
            .wrapping_add(incoming as u32)
            & 0xffff;
        self.b = self
            .b
            .wrapping_sub(self.len.wrapping_mul(out as u32))
            .wrapping_add(self.a)
            & 0xffff;
    }

    pub fn value(&self) -> u32 {
        self.b << 16 | self.a
    }
}

/// The weak checksum of one block.
pub fn weak(block: &[u8]) -> u32 {
    Rolling::new(block).value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(weak(b""), 0);
        // a = 1 + 2 + 3 = 6, b = 3·1 + 2·2 + 1·3 = 10
        assert_eq!(weak(&[1, 2, 3]), 10 << 16 | 6);
        // a = 3·255 = 765, b = (3 + 2 + 1)·255 = 1530
        assert_eq!(weak(&[255, 255, 255]), 1530 << 16 | 765);
    }

    #[test]
    fn rolling_equals_computing_afresh_at_every_offset() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
        for n in [1, 2, 16, 700] {
            let mut r = Rolling::new(&data[..n]);
            for start in 1..=data.len() - n {
                r.roll(data[start - 1], data[start + n - 1]);
                assert_eq!(r.value(), weak(&data[start..start + n]), "n={n} at {start}");
            }
        }
    }

    #[test]
    fn sums_wrap_at_16_bits() {
        let block = vec![0xffu8; 1000];
        // a = 255000 mod 65536, b = 255·(1000·1001/2) mod 65536
        let a = 255_000u32 % 65536;
        let b = (255u64 * 500_500 % 65536) as u32;
        assert_eq!(weak(&block), b << 16 | a);
    }
}
