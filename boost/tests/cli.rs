//! The `boost` command line: train with an evaluation set, predict, evaluate, continue training, and
//! refuse bad input with a message and a non-zero exit status without writing a model.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(relative: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data").join(relative);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("boost-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn boost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_boost")).args(args).output().expect("run boost")
}

/// `boost train ARGS -o MODEL`: the whole command line, and what it gave.
fn train_to(args: Vec<String>, model: &Path) -> (Vec<String>, Output) {
    let mut all = vec!["train".to_string()];
    all.extend(args);
    all.extend(["-o".into(), model.display().to_string()]);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = boost(&refs);
    (all, out)
}

/// `boost predict -m MODEL DATA` on the CPU.
fn out_predictions(model: &Path, data: &Path) -> Output {
    boost(&["predict", "-m", model.to_str().unwrap(), data.to_str().unwrap()])
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn train_predict_eval_and_continue() {
    let dir = scratch("flow");
    let model = dir.join("model.json");
    let (train, test) = (data("higgs_lgbm_sample/binary.train"), data("higgs_lgbm_sample/binary.test"));
    let eval = format!("test={}", test.display());
    let plot = dir.join("curve.svg");
    let out = boost(&[
        "train",
        train.to_str().unwrap(),
        "--eval",
        &eval,
        "--rounds",
        "12",
        "--plot",
        plot.to_str().unwrap(),
        "-o",
        model.to_str().unwrap(),
        "objective=binary:logistic",
        "eval_metric=logloss",
        "eval_metric=auc",
        "max_depth=4",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = text(&out.stdout);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 12, "one eval line per round:\n{log}");
    assert!(lines[0].starts_with("[0]\ttrain-logloss:0.6"), "{}", lines[0]);
    assert!(lines[11].starts_with("[11]\ttrain-logloss:"), "{}", lines[11]);
    assert_eq!(lines[11].split('\t').count(), 5, "4 metrics: {}", lines[11]);
    let last_auc: f64 = lines[11].rsplit(':').next().unwrap().parse().unwrap();
    assert!(last_auc > 0.75, "test auc {last_auc}");
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    assert!(svg.starts_with("<svg") && svg.contains("test-auc"), "an SVG with the series' legend");

    let out = boost(&["predict", "-m", model.to_str().unwrap(), test.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let predictions: Vec<f64> = text(&out.stdout).lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(predictions.len(), 500);
    assert!(predictions.iter().all(|&p| (0.0..=1.0).contains(&p)));
    let out = boost(&["predict", "-m", model.to_str().unwrap(), "--leaf", test.to_str().unwrap()]);
    assert_eq!(text(&out.stdout).lines().next().unwrap().split(',').count(), 12, "a leaf per tree");
    // On the device (the SIMT emulator here): the same digits, leaf indices too.
    let on_device = |extra: &[&str]| {
        let mut args = vec!["predict", "-m", model.to_str().unwrap(), "--device", "cuda"];
        args.extend(extra);
        args.push(test.to_str().unwrap());
        Command::new(env!("CARGO_BIN_EXE_boost")).args(&args).env("PRIMITIVES_DEVICE", "emulator").output().unwrap()
    };
    let device = on_device(&[]);
    assert!(device.status.success(), "{}", text(&device.stderr));
    assert!(text(&device.stderr).contains("predicting on"), "{}", text(&device.stderr));
    assert_eq!(text(&device.stdout), text(&out_predictions(&model, &test).stdout));
    let leaves = on_device(&["--leaf"]);
    assert!(leaves.status.success(), "{}", text(&leaves.stderr));
    assert_eq!(text(&leaves.stdout), text(&out.stdout), "the CPU's leaf indices");

    let out = boost(&["eval", "-m", model.to_str().unwrap(), test.to_str().unwrap(), "--metric", "auc"]);
    let reported: f64 = text(&out.stdout).trim().strip_prefix("auc:").expect("auc:value").parse().unwrap();
    assert!((reported - last_auc).abs() < 1e-5, "eval {reported} vs the training log {last_auc}");

    // Continuing adds rounds after the saved ones.
    let more = dir.join("more.json");
    let out = boost(&[
        "train",
        train.to_str().unwrap(),
        "--rounds",
        "3",
        "--continue-from",
        model.to_str().unwrap(),
        "-o",
        more.to_str().unwrap(),
        "objective=binary:logistic",
        "max_depth=4",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("[12]\t"), "{}", text(&out.stdout));
    let continued = boost::model::Model::load_json(&more).expect("continued model");
    assert_eq!(continued.num_rounds(), 15);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_fails_with_a_message_and_writes_no_model() {
    let dir = scratch("bad");
    let model = dir.join("model.json");
    let bad_data = dir.join("bad.csv");
    // A row with a missing field.
    std::fs::write(&bad_data, "1,2,3\n0,1,2\n1,3\n").unwrap();
    let train = data("higgs_lgbm_sample/binary.train");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![train.display().to_string(), "eta=-1".into()], "parameter `eta`"),
        (vec![train.display().to_string(), "no_such=1".into()], "parameter `no_such`: unknown"),
        (
            vec![
                data("california_housing/housing.train.csv").display().to_string(),
                "--label".into(),
                "median_house_value".into(),
                "objective=binary:logistic".into(),
            ],
            "label",
        ),
        (vec![dir.join("absent.csv").display().to_string()], "absent.csv"),
        (vec![bad_data.display().to_string(), "--format".into(), "csv".into()], "bad.csv"),
    ];
    for (args, message) in cases {
        let (all, out) = train_to(args, &model);
        assert!(!out.status.success(), "{all:?} should fail");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(message), "{all:?}: {stderr}");
        assert!(!model.exists(), "{all:?}: no model written");
    }
    // A corrupt model file is refused by predict.
    std::fs::write(&model, "{\"learner\": 3}").unwrap();
    let out = boost(&["predict", "-m", model.to_str().unwrap(), train.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("model"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a new user found on 2026-11-23 (issue 18): each an error naming what is wrong, exit status 1
/// (not an abort), and no model written.
#[test]
fn regressions_of_the_first_user_trial_fail_cleanly() {
    let dir = scratch("trial");
    let model = dir.join("model.json");
    let file = |name: &str, content: &str| {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        path.display().to_string()
    };
    let huge_index = file("huge.libsvm", "0 1:1\n1 4000000000:1\n");
    let header_only = file("header.csv", "label,x,y\n");
    let typo = file("typo.csv", "label,a,b\n1,1,5\n0,2,6\n1,x,7\n");
    let train = data("higgs_lgbm_sample/binary.train").display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![huge_index], "huge.libsvm:2: column index 4000000000 is beyond the 16777216 features"),
        (vec![header_only], "header.csv: no data rows"),
        (vec![typo.clone()], "typo.csv:4: column 1 (`a`): `x` is not a number"),
        (vec![train, "--early-stopping-rounds".into(), "3".into()], "needs an evaluation set"),
    ];
    for (args, message) in cases {
        let (all, out) = train_to(args, &model);
        assert_eq!(out.status.code(), Some(1), "{all:?}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(stderr.contains(message), "{all:?}: {stderr}");
        assert!(!model.exists(), "{all:?}: no model written");
    }
    // Named categorical, the column with the typo trains (as three categories).
    let out = boost(&["train", &typo, "--categorical", "a", "-o", model.to_str().unwrap(), "--rounds", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(model.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `boost train` with `PRIMITIVES_DEVICE` set or removed, and `device=`, writing `model`.
fn train_on(device: &str, env: Option<&str>, model: &Path) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_boost"));
    match env {
        Some(kind) => command.env("PRIMITIVES_DEVICE", kind),
        None => command.env_remove("PRIMITIVES_DEVICE"),
    };
    let train = data("higgs_lgbm_sample/binary.train");
    command.args(["train", &train.display().to_string(), "--rounds", "3", "-o", &model.display().to_string()]);
    command.args(["objective=binary:logistic", "max_depth=4", "subsample=0.9", "seed=3", &format!("device={device}")]);
    command.output().expect("run boost")
}

#[test]
fn the_device_backend_writes_the_cpu_model_file_and_says_where_it_trained() {
    let dir = scratch("device");
    let (cpu, emulated) = (dir.join("cpu.json"), dir.join("emulated.json"));
    let out = train_on("cpu", None, &cpu);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("on cpu;"), "{}", text(&out.stderr));
    // `device=cuda` on the SIMT emulator: the GPU backend's kernels, run on the CPU.
    let out = train_on("cuda", Some("emulator"), &emulated);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("on SIMT emulator"), "{}", text(&out.stderr));
    let (a, b) = (std::fs::read(&cpu).unwrap(), std::fs::read(&emulated).unwrap());
    assert!(a.len() > 1000 && a == b, "the device backend's model file differs from the CPU's");
}

#[test]
fn a_gpu_that_cannot_be_opened_is_an_error_naming_it_and_no_model_is_written() {
    let dir = scratch("no-device");
    let model = dir.join("model.json");
    let out = train_on("cuda:4096", None, &model);
    assert!(!out.status.success());
    let message = text(&out.stderr);
    assert!(message.contains("parameter `device`: `cuda:4096` cannot be used"), "{message}");
    assert!(!model.exists());
    // `auto` falls back to the CPU and says why; it is the CLI's default.
    let out = train_on("auto", Some("cuda:4096"), &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("on cpu (device=auto, no usable GPU"), "{}", text(&out.stderr));
    let train = data("higgs_lgbm_sample/binary.train");
    let out = Command::new(env!("CARGO_BIN_EXE_boost"))
        .env("PRIMITIVES_DEVICE", "cuda:4096")
        .args(["train", &train.display().to_string(), "--rounds", "1", "-o", &model.display().to_string()])
        .output()
        .expect("run boost");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("on cpu (device=auto"), "{}", text(&out.stderr));
}

#[test]
fn generate_writes_the_same_table_as_raw_f32() {
    let dir = scratch("generate-raw");
    let (csv, raw) = (dir.join("data.csv"), dir.join("data.f32"));
    let out =
        boost(&["generate", csv.to_str().unwrap(), "--rows", "300", "--cols", "9", "--raw", raw.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let values: Vec<f32> =
        std::fs::read(&raw).unwrap().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let from_csv: Vec<f32> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .flat_map(|line| {
            line.split(',').map(|f| if f.is_empty() { f32::NAN } else { f.parse().unwrap() }).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(values.len(), 300 * 10);
    assert!(values.iter().any(|v| v.is_nan()), "the generator leaves values missing");
    let same = values.iter().zip(&from_csv).all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
    assert!(same && values.len() == from_csv.len(), "the raw table differs from the CSV");
}

/// `boost train synthetic:ROWSxCOLS` trains on `boost generate`'s rows without a file: on the CPU,
/// made on the (emulated) GPU, and over two emulated GPUs, each writes the model of the CSV file
/// `boost generate` wrote; a malformed spec is an error naming it.
#[test]
fn synthetic_rows_train_as_the_generated_file() {
    let dir = scratch("synthetic");
    let csv = dir.join("data.csv");
    let out = boost(&["generate", csv.to_str().unwrap(), "--rows", "3000", "--cols", "10"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let train = |data: &str, device: &str, extra: &[&str], model: &Path| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_boost"));
        command.env("PRIMITIVES_DEVICE", "emulator");
        command.args(["train", data, "--rounds", "3", "-o", model.to_str().unwrap(), "max_depth=4"]);
        command.args(["objective=binary:logistic", &format!("device={device}")]).args(extra);
        command.output().expect("run boost")
    };
    let from_file = dir.join("file.json");
    let out = train(csv.to_str().unwrap(), "cpu", &[], &from_file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The trees and the model's parameters (a CSV file's model also keeps its column codes).
    let learned = |path: &Path| {
        let model: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        (model["learner"]["gradient_booster"].to_string(), model["learner"]["learner_model_param"].to_string())
    };
    let expected = learned(&from_file);
    assert!(expected.0.len() > 1000, "a model worth comparing");
    for (device, extra, name) in [("cpu", &[][..], "cpu"), ("cuda", &[], "gpu"), ("cuda", &["n_gpus=2"], "gpus")] {
        let model = dir.join(format!("{name}.json"));
        let out = train("synthetic:3000x10", device, extra, &model);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(learned(&model) == expected, "{name}: not the model of the generated file");
    }
    let out = train("synthetic:3000y10", "cpu", &[], &dir.join("bad.json"));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("synthetic:ROWSxCOLS"), "{}", text(&out.stderr));
}
