//! Documents across data directories: the newest copy wins, older ones are brought up to it
//! without a new generation, and damage in any copy is found.

use std::path::Path;

use super::*;

const NAME: &str = "ferrolog-test-document";

fn document(generation: u64, body: &str) -> Document {
    Document {
        generation,
        body: body.to_owned(),
        source: None,
    }
}

fn generation_in(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(NAME))
        .map(|text| text.lines().nth(1).unwrap_or_default().to_owned())
        .unwrap_or_else(|_| "missing".to_owned())
}

#[test]
fn the_newest_copy_wins_and_spreading_keeps_its_generation() {
    let (_temp, dirs) = temp_dirs(3);
    let manager = open(&dirs);
    manager
        .documents()
        .store(NAME, &document(4, "four\n"))
        .unwrap();
    manager.shutdown().unwrap();
    // The second directory holds a newer copy (a change it kept while the others were
    // offline); the third none.
    std::fs::write(dirs[1].join(NAME), "0\n5\nfive\n").unwrap();
    std::fs::remove_file(dirs[2].join(NAME)).unwrap();

    let manager = open(&dirs);
    let newest = manager.documents().read(NAME).unwrap();
    assert_eq!((newest.generation, newest.body.as_str()), (5, "five\n"));
    assert_eq!(newest.source.as_deref(), Some(dirs[1].join(NAME).as_path()));
    let copies = manager.documents().read_copies(NAME).unwrap();
    assert_eq!(
        copies
            .iter()
            .map(|copy| copy.generation)
            .collect::<Vec<_>>(),
        [4, 5, 0]
    );
    manager.documents().spread(NAME, &newest).unwrap();
    // Brought up to the newest under its own generation, never past it: a copy kept in a
    // directory that is offline now must still be able to win later.
    assert_eq!(
        dirs.iter()
            .map(|dir| generation_in(dir))
            .collect::<Vec<_>>(),
        ["5", "5", "5"]
    );
    // An older document spread writes nothing over a newer copy.
    manager
        .documents()
        .spread(NAME, &document(3, "three\n"))
        .unwrap();
    assert_eq!(manager.documents().read(NAME).unwrap().body, "five\n");
    manager.shutdown().unwrap();
}

#[test]
fn a_damaged_header_in_any_copy_is_named() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    manager
        .documents()
        .store(NAME, &document(2, "two\n"))
        .unwrap();
    manager.shutdown().unwrap();
    std::fs::write(dirs[1].join(NAME), "0\nnot-a-number\n").unwrap();
    let manager = open(&dirs);
    let error = manager.documents().read(NAME).unwrap_err().to_string();
    assert!(
        error.contains(&dirs[1].join(NAME).display().to_string()) && error.contains("line 2"),
        "{error}"
    );
    manager.shutdown().unwrap();
}

#[test]
fn damage_in_an_older_topic_configs_copy_stops_startup_too() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let overrides = BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned())]);
    manager.topic_configs().set("orders", overrides).unwrap();
    manager.shutdown().unwrap();
    // The second directory's copy is older and its entry damaged; the first is intact.
    let path = dirs[1].join(TOPIC_CONFIGS_FILE);
    std::fs::write(&path, "0\n0\n1\nno-value-here\n").unwrap();
    let error = LogManager::open(config(&dirs), Arc::new(ManualClock::new(NOW)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&path.display().to_string()) && error.contains("line 4"),
        "{error}"
    );
}
