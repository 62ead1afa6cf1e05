//! M_Key derivation: one key per port from a secret, so that a key read off one port
//! (by a compromised host, say) opens no other port.
//!
//! The PRF is SipHash-2-4 (Aumasson and Bernstein, 2012), written here from the paper's
//! description; it is keyed with the 128-bit secret and fed the port GUID.

use crate::config::MKeyMode;

fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// SipHash-2-4 of `msg` under key `(k0, k1)` (little-endian words as in the paper).
#[must_use]
pub fn siphash24(k0: u64, k1: u64, msg: &[u8]) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut chunks = msg.chunks_exact(8);
    for c in &mut chunks {
        let m = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        v[3] ^= m;
        sip_round(&mut v);
        sip_round(&mut v);
        v[0] ^= m;
    }
    let rest = chunks.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    let m = u64::from_le_bytes(last) | ((msg.len() as u64 & 0xFF) << 56);
    v[3] ^= m;
    sip_round(&mut v);
    sip_round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xFF;
    for _ in 0..4 {
        sip_round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// The M_Key the policy gives the port with this GUID (a switch: its port-0 GUID).
/// `None` when M_Keys are off. Never 0: 0 would mean "no key".
#[must_use]
pub fn key_for(mode: MKeyMode, port_guid: u64) -> Option<u64> {
    match mode {
        MKeyMode::Off => None,
        MKeyMode::Single(k) => Some(k),
        MKeyMode::PerPort { secret } => {
            Some(siphash24(secret[0], secret[1], &port_guid.to_be_bytes()).max(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Key 00 01 .. 0f as the paper reads it: two little-endian words.
    const K0: u64 = 0x0706_0504_0302_0100;
    const K1: u64 = 0x0f0e_0d0c_0b0a_0908;

    /// Test vector from the SipHash paper, appendix A: key 00..0f, message 00..0e.
    #[test]
    fn paper_vector() {
        let k0 = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let k1 = u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]);
        assert_eq!((k0, k1), (K0, K1));
        let msg: Vec<u8> = (0u8..15).collect();
        assert_eq!(siphash24(k0, k1, &msg), 0xa129_ca61_49be_45e5);
    }

    /// Vectors of the reference implementation (key 00..0f, message 00 01 .. of each
    /// length): the empty message, short tails, exactly one and two words, a word and
    /// a tail, and the longest.
    #[test]
    fn reference_vectors() {
        let msg: Vec<u8> = (0u8..64).collect();
        for (len, want) in [
            (0, 0x726f_db47_dd0e_0e31u64),
            (1, 0x74f8_39c5_93dc_67fd),
            (7, 0xab02_00f5_8b01_d137),
            (8, 0x93f5_f579_9a93_2462),
            (9, 0x9e00_82df_0ba9_e4b0),
            (15, 0xa129_ca61_49be_45e5),
            (16, 0x3f2a_cc7f_57c2_9bdb),
            (63, 0x958a_324c_eb06_4572),
        ] {
            assert_eq!(siphash24(K0, K1, &msg[..len]), want, "length {len}");
        }
    }

    /// The per-port key is SipHash-2-4 of the GUID's 8 bytes in wire (big-endian)
    /// order under `secret = [k0, k1]`: GUID 00 01 .. 07 under key 00..0f is the
    /// reference vector of the 8-byte message.
    #[test]
    fn per_port_key_is_siphash_of_the_guid_bytes() {
        let m = MKeyMode::PerPort { secret: [K0, K1] };
        assert_eq!(
            key_for(m, 0x0001_0203_0405_0607),
            Some(0x93f5_f579_9a93_2462)
        );
        // Byte-reversed GUID, same key: the vector's message read the other way is
        // another port, so another key.
        assert_ne!(
            key_for(m, 0x0706_0504_0302_0100),
            key_for(m, 0x0001_0203_0405_0607)
        );
    }

    #[test]
    fn per_port_keys_differ() {
        let m = MKeyMode::PerPort { secret: [1, 2] };
        assert_ne!(key_for(m, 10), key_for(m, 11));
        assert_ne!(
            key_for(m, 10),
            key_for(MKeyMode::PerPort { secret: [1, 3] }, 10)
        );
        assert_eq!(key_for(MKeyMode::Single(5), 10), Some(5));
        assert_eq!(key_for(MKeyMode::Off, 10), None);
    }
}
