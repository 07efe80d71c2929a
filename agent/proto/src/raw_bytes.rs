//! Byte fields (file content, output) as one block instead of one element at a time.
//!
//! serde sees a `Vec<u8>` as a sequence: bincode then writes and reads it one `u8` call at
//! a time, which is most of the CPU a 100 MiB copy costs outside hashing and the kernel.
//! bincode writes a byte string exactly as it writes a sequence of `u8` (a `u64` length,
//! then the bytes), so the fields marked `#[serde(with = "raw_bytes")]` keep their wire
//! bytes: nothing changes for an agent of the same protocol version.

use std::fmt;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;

pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(bytes)
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    deserializer.deserialize_byte_buf(BytesVisitor)
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_byte_buf<E>(self, bytes: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(bytes)
    }

    fn visit_bytes<E>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
        Ok(bytes.to_vec())
    }

    // Formats that have no byte strings hand them over as a sequence.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(byte) = seq.next_element()? {
            bytes.push(byte);
        }
        Ok(bytes)
    }
}

/// The same for an optional byte field.
pub mod option {
    use std::fmt;

    use serde::de::{Deserializer, Visitor};
    use serde::ser::Serializer;

    pub fn serialize<S: Serializer>(
        bytes: &Option<Vec<u8>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => serializer.serialize_some(&Raw(bytes)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        deserializer.deserialize_option(OptionVisitor)
    }

    struct Raw<'a>(&'a [u8]);

    impl serde::Serialize for Raw<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_bytes(self.0)
        }
    }

    struct OptionVisitor;

    impl<'de> Visitor<'de> for OptionVisitor {
        type Value = Option<Vec<u8>>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an optional byte string")
        }

        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use crate::frame::{encode_frame, read_frame};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct AsSequence {
        data: Vec<u8>,
        maybe: Option<Vec<u8>>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct AsBlock {
        #[serde(with = "super")]
        data: Vec<u8>,
        #[serde(with = "super::option")]
        maybe: Option<Vec<u8>>,
    }

    #[test]
    fn a_block_has_the_wire_bytes_of_a_sequence_both_ways() {
        for maybe in [None, Some(vec![]), Some(vec![0, 255, 7])] {
            let sequence = AsSequence {
                data: (0..=255).collect(),
                maybe: maybe.clone(),
            };
            let block = AsBlock {
                data: (0..=255).collect(),
                maybe,
            };
            let wire = encode_frame(&sequence).unwrap();
            assert_eq!(encode_frame(&block).unwrap(), wire);
            assert_eq!(
                read_frame::<_, AsBlock>(&mut &wire[..]).unwrap(),
                Some(block)
            );
            let back = encode_frame(&AsBlock {
                data: sequence.data.clone(),
                maybe: sequence.maybe.clone(),
            })
            .unwrap();
            assert_eq!(
                read_frame::<_, AsSequence>(&mut &back[..]).unwrap(),
                Some(sequence)
            );
        }
    }

    #[test]
    fn a_block_longer_than_its_message_is_an_error_not_a_short_read() {
        // A length that claims more bytes than the message holds.
        let wire = encode_frame(&(1000u64, [1u8; 10], 0u8)).unwrap();
        assert!(read_frame::<_, AsBlock>(&mut &wire[..]).is_err());
    }
}
