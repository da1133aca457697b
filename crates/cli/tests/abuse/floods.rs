//! Connections: floods past the per-address and broker-wide limits, silent ones, size prefixes
//! declaring more than the request memory, and fetchers that never read.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest};

use super::common::wire::{connect_from, exchange, frame};
use super::{IDLE_LIMIT, SETUP_LIMIT, topic, versions_request};

pub fn flood(port: u16) {
    // One address past its limit of 50: each connection asks for ApiVersions as soon as it is
    // open; the broker answers the first 50, which stay open, and closes every later one
    // unanswered. Nothing here waits on a clock: all 400 take well under the idle limit.
    let request = frame(ApiKey::ApiVersions, 3, &versions_request());
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..400 {
        let mut stream = connect_from("127.0.0.2", port).unwrap();
        match exchange(&mut stream, &request) {
            Some(_) => held.push(stream),
            None => refused += 1,
        }
    }
    assert_eq!(
        held.len(),
        50,
        "connections from one address that were served"
    );
    assert_eq!(refused, 350);
    for stream in &mut held {
        assert!(
            exchange(stream, &request).is_some(),
            "a connection within the limit is still served"
        );
    }
}

pub fn flood_past_the_broker_limit(port: u16) {
    // max.connections is 300: past it the broker accepts no more (they wait in the listen
    // backlog, unanswered) until connections close. The 300 answers are awaited (up to 30 s on
    // a loaded machine), then the other 60 are given half a second more to show they stay
    // unanswered. All of this takes well under the idle limit, which would otherwise free
    // slots.
    let request = frame(ApiKey::ApiVersions, 3, &versions_request());
    let mut held: Vec<TcpStream> = (0..360)
        .filter_map(|index| connect_from(&format!("127.0.1.{}", index % 200 + 1), port).ok())
        .collect();
    assert_eq!(
        held.len(),
        360,
        "every connection waits in the listen backlog"
    );
    for stream in &mut held {
        stream.write_all(&request).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(1)))
            .unwrap();
    }
    let mut answered = vec![false; held.len()];
    let count_answers = |held: &mut [TcpStream], answered: &mut [bool]| {
        for (stream, answered) in held.iter_mut().zip(answered.iter_mut()) {
            let mut size = [0u8; 4];
            if !*answered && stream.read_exact(&mut size).is_ok() {
                *answered = true;
            }
        }
        answered.iter().filter(|answered| **answered).count()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while count_answers(&mut held, &mut answered) < 300 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        count_answers(&mut held, &mut answered),
        300,
        "connections served at max.connections=300"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
}

pub fn never_reading_fetchers(port: u16) {
    // 40 fetches of up to 50 MiB from a topic holding 40 MiB, none read: each write stalls as
    // soon as the socket buffers fill, and connections.max.idle.ms closes them.
    let mut stalled: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut stream = connect_from("127.0.0.4", port).unwrap();
            let fetch = FetchRequest::default()
                .with_max_wait_ms(100)
                .with_max_bytes(50 << 20)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(topic("fetched"))
                        .with_partitions(vec![
                            FetchPartition::default()
                                .with_partition(0)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(50 << 20),
                        ]),
                ]);
            stream.write_all(&frame(ApiKey::Fetch, 12, &fetch)).unwrap();
            stream
        })
        .collect();
    // Reading before the idle limit passes would unblock the writes.
    std::thread::sleep(IDLE_LIMIT + Duration::from_secs(2));
    for stream in &mut stalled {
        let read = read_until_closed(stream, Duration::from_secs(10))
            .expect("a connection that reads nothing is closed after connections.max.idle.ms");
        // What arrived is what the socket buffers took before the writes stalled (3.9 MiB
        // here), nowhere near the 40 MiB response.
        assert!(read < 20 << 20, "the response was cut short: {read} bytes");
    }
}

/// Reads what the broker sends until it closes the connection (EOF or reset): `Some(bytes
/// read)`, or `None` when it is still open after `wait`.
pub fn read_until_closed(stream: &mut TcpStream, wait: Duration) -> Option<usize> {
    let deadline = Instant::now() + wait;
    let mut sink = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut sink) {
            Ok(0) => return Some(total),
            Ok(read) => total += read,
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            Err(_) => return Some(total),
        }
    }
}

pub fn stalled_prefixes(port: u16) {
    // Seven connections declare 60 MiB requests, 420 MiB past the 128 MiB request memory:
    // four send the size alone, three 1 MiB of the body too; then all send nothing for 3 s.
    // Requests of other connections are answered all along.
    let declared = (60i32 << 20).to_be_bytes();
    let stalled: Vec<TcpStream> = (0..7)
        .map(|index| {
            let mut stream = connect_from("127.0.0.5", port).unwrap();
            stream.write_all(&declared).unwrap();
            if index >= 4 {
                stream.write_all(&vec![0u8; 1 << 20]).unwrap();
            }
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    drop(stalled);
}

pub fn silent_connections(port: u16) {
    // 250 connections from as many addresses that send nothing: each is closed unanswered once
    // ferrolog.connection.setup.timeout.ms passes. Then as many again, which ask for
    // ApiVersions, are all served: the silent ones' slots are free.
    let mut silent: Vec<TcpStream> = (0..250)
        .map(|index| connect_from(&format!("127.0.3.{}", index + 1), port).unwrap())
        .collect();
    for stream in &mut silent {
        assert_eq!(
            read_until_closed(stream, SETUP_LIMIT + Duration::from_secs(10)),
            Some(0),
            "a connection that sends nothing is closed, unanswered"
        );
    }
    drop(silent);
    let request = frame(ApiKey::ApiVersions, 3, &versions_request());
    let served: Vec<TcpStream> = (0..250)
        .map(|index| {
            let mut stream = connect_from(&format!("127.0.3.{}", index + 1), port).unwrap();
            assert!(
                exchange(&mut stream, &request).is_some(),
                "connection {index} after the silent ones is served"
            );
            stream
        })
        .collect();
    drop(served);
    // Their slots are given back before the next phase counts connections.
    std::thread::sleep(Duration::from_millis(300));
}
