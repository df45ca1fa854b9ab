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
    // Said in one short phrase: the reason (no driver on most machines) only at verbosity=2.
    assert!(text(&out.stderr).contains("on cpu (device=auto, no usable GPU);"), "{}", text(&out.stderr));
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
    // The last 4 columns categorical: categorical splits, the same model on the CPU and the GPU.
    let (cpu, gpu) = (dir.join("cats-cpu.json"), dir.join("cats-gpu.json"));
    for (device, model) in [("cpu", &cpu), ("cuda", &gpu)] {
        let out = train("synthetic:3000x10:c4", device, &[], model);
        assert!(out.status.success(), "{device}: {}", text(&out.stderr));
    }
    let trees = learned(&cpu).0;
    assert!(trees.matches("\"categories_nodes\":[").count() > trees.matches("\"categories_nodes\":[]").count());
    assert!(learned(&cpu) == learned(&gpu), "the GPU's categorical model is the CPU's");
    // Ordered target statistics: the summary says the file is not XGBoost's; the CPU's and the
    // GPU's files are the same; `boost predict` reads it.
    let (cpu, gpu) = (dir.join("ts-cpu.json"), dir.join("ts-gpu.json"));
    for (device, model) in [("cpu", &cpu), ("cuda", &gpu)] {
        let out = train("synthetic:3000x10:c4", device, &["categorical_encoding=ordered_target"], model);
        assert!(out.status.success(), "{device}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("encoded by ordered target statistics"), "{}", text(&out.stderr));
    }
    assert!(learned(&cpu).0.contains("\"target_statistics\""));
    assert!(learned(&cpu) == learned(&gpu), "the GPU's ordered-statistics model is the CPU's");
    let rows = dir.join("ts-rows.csv");
    let out = boost(&["generate", rows.to_str().unwrap(), "--rows", "50", "--cols", "10", "--categorical", "4"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = out_predictions(&cpu, &rows);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 50);
    // `--raw` alone writes no CSV.
    let raw = dir.join("only.f32");
    let out = boost(&["generate", "--rows", "10", "--cols", "4", "--categorical", "2", "--raw", raw.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&raw).unwrap().len(), 10 * 5 * 4);
}

// Regression tests of the defects found by trying the CLI as a new user (issue 43).

/// A CSV of `rows` rows with a header: `label` and the features `names` (x0 + x1 > 1 is the label),
/// with `delimiter` between fields; columns in `order` (indices into label-then-features).
fn write_csv(path: &Path, rows: usize, names: &[&str], order: &[usize], delimiter: &str, with_label: bool) {
    let header: Vec<&str> = std::iter::once("label").chain(names.iter().copied()).collect();
    let keep = |&&c: &&usize| with_label || c != 0;
    let mut text = order.iter().filter(keep).map(|&c| header[c]).collect::<Vec<_>>().join(delimiter);
    text.push('\n');
    for r in 0..rows {
        let features: Vec<f32> = (0..names.len()).map(|j| ((r * 37 + j * 53) % 101) as f32 / 100.0).collect();
        let label = f32::from(features[0] + features[1] > 1.0);
        let fields: Vec<f32> = std::iter::once(label).chain(features).collect();
        let line: Vec<String> = order.iter().filter(keep).map(|&c| fields[c].to_string()).collect();
        text.push_str(&line.join(delimiter));
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn model_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn best_iteration_is_recorded_only_when_early_stopping_ran() {
    let dir = scratch("best-iteration");
    let (train, model) = (dir.join("train.csv"), dir.join("model.json"));
    write_csv(&train, 300, &["a", "b", "c"], &[0, 1, 2, 3], ",", true);
    let eval = format!("test={}", train.display());
    let args = |extra: &[&str]| {
        let mut args = vec![train.display().to_string(), "--eval".into(), eval.clone(), "--rounds".into(), "20".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["objective=binary:logistic".into(), "device=cpu".into()]);
        args
    };
    let (_, out) = train_to(args(&[]), &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("best iteration"), "{}", text(&out.stderr));
    let attributes = &model_json(&model)["learner"]["attributes"];
    assert!(attributes.get("best_iteration").is_none(), "{attributes}");
    let (_, out) = train_to(args(&["--early-stopping-rounds", "5"]), &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("best iteration"), "{}", text(&out.stderr));
    assert!(model_json(&model)["learner"]["attributes"].get("best_iteration").is_some());
}

#[test]
fn output_files_replace_only_their_target() {
    let dir = scratch("outputs");
    let (train, model) = (dir.join("train.csv"), dir.join("model.json"));
    write_csv(&train, 200, &["a", "b"], &[0, 1, 2], ",", true);
    let (_, out) =
        train_to(vec![train.display().to_string(), "--rounds".into(), "3".into(), "device=cpu".into()], &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let predict =
        |output: &str| boost(&["predict", "-m", model.to_str().unwrap(), train.to_str().unwrap(), "-o", output]);
    let expected = text(&out_predictions(&model, &train).stdout);
    // A file named like the old fixed temporary name survives, and none is left behind.
    let (target, neighbour) = (dir.join("p.txt"), dir.join("p.tmp"));
    std::fs::write(&neighbour, "mine").unwrap();
    assert!(predict(target.to_str().unwrap()).status.success());
    assert_eq!(std::fs::read_to_string(&neighbour).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), expected);
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["model.json", "p.tmp", "p.txt", "train.csv"]);
    // A symbolic link stays a link to the file it names.
    #[cfg(unix)]
    {
        let link = dir.join("link.txt");
        std::os::unix::fs::symlink("p.txt", &link).unwrap();
        std::fs::write(&target, "old").unwrap();
        assert!(predict(link.to_str().unwrap()).status.success());
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), expected);
    }
    // Standard output, by name or as `-`; a device file is written in place.
    for name in ["/dev/stdout", "-"] {
        let out = predict(name);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout).trim_end(), expected.trim_end(), "{name}");
    }
    assert!(predict("/dev/null").status.success());
    assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
    // A directory is named as such.
    let out = predict(&format!("{}/", dir.join("new").display()));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("give a file name"), "{}", text(&out.stderr));
}

#[test]
fn csv_header_names_become_feature_names_and_are_matched_at_prediction() {
    let dir = scratch("names");
    let (train, model) = (dir.join("train.csv"), dir.join("model.json"));
    write_csv(&train, 300, &["alpha", "beta", "gamma"], &[0, 1, 2, 3], ",", true);
    let (_, out) =
        train_to(vec![train.display().to_string(), "--rounds".into(), "5".into(), "device=cpu".into()], &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(model_json(&model)["learner"]["feature_names"], serde_json::json!(["alpha", "beta", "gamma"]));
    let importance = boost(&["importance", "-m", model.to_str().unwrap()]);
    assert!(text(&importance.stdout).starts_with("alpha\t") || text(&importance.stdout).starts_with("beta\t"));
    // The same rows with the columns in another order predict the same values.
    let shuffled = dir.join("shuffled.csv");
    write_csv(&shuffled, 300, &["alpha", "beta", "gamma"], &[3, 1, 0, 2], ",", true);
    let out = boost(&["predict", "-m", model.to_str().unwrap(), "--label", "label", shuffled.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), text(&out_predictions(&model, &train).stdout));
    // A column the model does not know, or one it lacks, is an error naming it.
    let other = dir.join("other.csv");
    write_csv(&other, 10, &["alpha", "beta", "delta"], &[0, 1, 2, 3], ",", true);
    let out = out_predictions(&model, &other);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("`delta`") && text(&out.stderr).contains("not one of the model's features"));
}

#[test]
fn prediction_data_without_labels_and_from_standard_input() {
    let dir = scratch("no-label");
    let (train, model) = (dir.join("train.csv"), dir.join("model.json"));
    write_csv(&train, 300, &["a", "b"], &[0, 1, 2], ",", true);
    let (_, out) =
        train_to(vec![train.display().to_string(), "--rounds".into(), "5".into(), "device=cpu".into()], &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected = text(&out_predictions(&model, &train).stdout);
    let unlabelled = dir.join("unlabelled.csv");
    write_csv(&unlabelled, 300, &["a", "b"], &[0, 1, 2], ",", false);
    let out = boost(&["predict", "-m", model.to_str().unwrap(), "--no-label", unlabelled.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), expected);
    // Without --no-label the first column is taken as the label, and the message says how to fix it.
    let out = out_predictions(&model, &unlabelled);
    assert!(!out.status.success());
    // Standard input, as `-`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_boost"))
        .args(["predict", "-m", model.to_str().unwrap(), "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&std::fs::read(&train).unwrap()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), expected);
}

#[test]
fn messages_say_what_is_wrong() {
    let dir = scratch("messages");
    let (train, model) = (dir.join("train.csv"), dir.join("model.json"));
    write_csv(&train, 300, &["a", "b"], &[0, 1, 2], ",", true);
    let fails_with = |params: &[&str], needles: &[&str]| {
        let mut args = vec![train.display().to_string(), "--rounds".to_string(), "2".to_string()];
        args.extend(params.iter().map(|p| p.to_string()));
        let (_, out) = train_to(args, &model);
        let message = text(&out.stderr);
        assert!(!out.status.success(), "{params:?} should fail");
        for needle in needles {
            assert!(message.contains(needle), "{params:?}: `{needle}` not in {message}");
        }
    };
    fails_with(&["max_depth=-3"], &["max_depth", "whole number >= 0"]);
    fails_with(&["objective=reg:nonsense"], &["unknown objective", "supported:", "binary:logistic"]);
    fails_with(&["eval_metric=nonsense"], &["unknown metric", "supported:", "logloss"]);
    fails_with(&["objective=survival:aft"], &["survival:aft needs label_lower_bound"]);
    fails_with(&["monotone_constraints=(1,0,1,1,1)"], &["monotone_constraints", "5 directions for 2 features"]);
    fails_with(&["interaction_constraints=[[0, 7]]"], &["interaction_constraints", "feature 7 does not exist"]);
    let constrained =
        vec![train.display().to_string(), "--rounds".into(), "2".into(), "monotone_constraints=(1,-1)".into()];
    let (_, out) = train_to(constrained, &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    fails_with(&["no_such_thing=1"], &["unknown parameter"]);
    fails_with(&["missing=-999"], &["missing", "--missing VALUE"]);
    // A semicolon-separated file is read as such.
    let semicolons = dir.join("semicolons.csv");
    write_csv(&semicolons, 300, &["a", "b"], &[0, 1, 2], ";", true);
    let (_, out) = train_to(vec![semicolons.display().to_string(), "--rounds".into(), "2".into()], &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A file of another width names both counts.
    let wide = dir.join("wide.csv");
    std::fs::write(&wide, "1,2,3,4\n0,5,6,7\n").unwrap();
    let out = out_predictions(&model, &wide);
    assert!(text(&out.stderr).contains("3 feature columns, but the model was trained on 2"), "{}", text(&out.stderr));
    // Binary input is not echoed raw to the terminal.
    let binary = dir.join("binary.csv");
    std::fs::write(&binary, b"\x1b[2J\x07\x00\x01,\x02\n\x1b]0;x\x07,1\n").unwrap();
    let out = out_predictions(&model, &binary);
    assert!(!out.status.success());
    assert!(!out.stderr.iter().any(|&b| b == 0x1b || b == 0x07 || b == 0), "{:?}", text(&out.stderr));
    // `--help` lists the objectives, metrics and parameters, without doubled defaults.
    let help = text(&boost(&["train", "--help"]).stdout);
    for needle in ["rank:ndcg", "aucpr", "colsample_bynode"] {
        assert!(help.contains(needle), "`{needle}` not in the help");
    }
    assert!(!help.contains("(default 0)"), "{help}");
}

#[test]
fn side_files_are_announced_and_can_be_named_or_ignored() {
    let dir = scratch("side-files");
    let (train, model) = (dir.join("train.csv"), dir.join("model.json"));
    write_csv(&train, 300, &["a", "b"], &[0, 1, 2], ",", true);
    let weights: String = (0..300).map(|i| format!("{}\n", 1 + i % 3)).collect();
    std::fs::write(dir.join("train.csv.weight"), &weights).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![train.display().to_string(), "--rounds".to_string(), "3".to_string(), "device=cpu".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let (_, out) = train_to(args, &model);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (text(&out.stderr), std::fs::read(&model).unwrap())
    };
    let (said, beside) = run(&[]);
    assert!(said.contains("weights of") && said.contains("train.csv.weight"), "{said}");
    let (said, ignored) = run(&["--no-side-files"]);
    assert!(!said.contains("weights of"), "{said}");
    assert_ne!(beside, ignored, "the weights change the model");
    let named = dir.join("w.txt");
    std::fs::write(&named, &weights).unwrap();
    let (said, given) = run(&["--weights", named.to_str().unwrap()]);
    assert!(said.contains("w.txt"), "{said}");
    assert_eq!(given, beside);
}

/// `--external-memory` reads the file in batches into pages (here in an unnamed cache file) and
/// writes the model of the file read whole, string columns and weights included; no cache file
/// is left. A cache directory that does not exist, and a libsvm file, are errors naming them, and
/// no model is written.
#[test]
fn external_memory_writes_the_whole_files_model() {
    let dir = scratch("external");
    for (file, label) in [("adult/adult_train.csv", "income"), ("higgs_lgbm_sample/binary.train", "0")] {
        let common = |model: &str| {
            let args = ["--label", label, "objective=binary:logistic", "max_depth=4", "--rounds", "4", "device=cpu"];
            let mut all: Vec<String> = vec![data(file).display().to_string()];
            all.extend(args.iter().map(|a| a.to_string()));
            (all, dir.join(model))
        };
        let (args, whole) = common("whole.json");
        let (_, out) = train_to(args, &whole);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let cache = scratch("external-cache");
        let (mut args, paged) = common("paged.json");
        args.extend(["--external-memory", "--batch-rows", "3000", "--cache-dir"].map(String::from));
        args.push(cache.display().to_string());
        let (all, out) = train_to(args, &paged);
        assert!(out.status.success(), "{all:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("MB on disk"), "{}", text(&out.stderr));
        assert!(std::fs::read(&whole).unwrap() == std::fs::read(&paged).unwrap(), "{file}: the same model file");
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0, "no cache file is left");
    }
    let model = dir.join("refused.json");
    let adult = data("adult/adult_train.csv").display().to_string();
    let args = [adult.as_str(), "--label", "income", "--external-memory", "--cache-dir", "/nonexistent/cache"];
    let (_, out) = train_to(args.map(String::from).to_vec(), &model);
    assert!(!out.status.success() && text(&out.stderr).contains("/nonexistent/cache"), "{}", text(&out.stderr));
    let agaricus = data("agaricus/agaricus.txt.train").display().to_string();
    let (_, out) = train_to([agaricus.as_str(), "--external-memory"].map(String::from).to_vec(), &model);
    assert!(!out.status.success() && text(&out.stderr).contains("CSV/TSV"), "{}", text(&out.stderr));
    assert!(!model.exists(), "no model is written");
}

/// `predict --contribs` / `--interactions`: a CSV with the features' names and `bias` in its
/// header, each row summing to the row's margin; the SHAP plot names the features; Saabas' values
/// need one of them.
#[test]
fn explanations_are_csv_with_a_header_and_sum_to_the_margin() {
    let dir = scratch("shap");
    let model = dir.join("model.json");
    let train = data("california_housing/housing.train.csv");
    let (_, out) = train_to(vec![train.display().to_string(), "--rounds".into(), "5".into()], &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let test = data("california_housing/housing.test.csv");
    let (m, t) = (model.to_str().unwrap(), test.to_str().unwrap());
    let plot = dir.join("shap.svg");
    let out = boost(&["predict", "-m", m, t, "--contribs", "--shap-plot", plot.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let contributions = text(&out.stdout);
    let mut lines = contributions.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.first(), Some(&"latitude"));
    assert_eq!(header.last(), Some(&"bias"));
    let margins = text(&boost(&["predict", "-m", m, t, "--margin"]).stdout);
    for (row, margin) in lines.zip(margins.lines()).take(50) {
        let sum: f32 = row.split(',').map(|v| v.parse::<f32>().unwrap()).sum();
        let margin: f32 = margin.parse().unwrap();
        assert!((sum - margin).abs() <= 1e-4 * (1.0 + margin.abs()), "{sum} vs {margin}");
    }
    assert!(std::fs::read_to_string(&plot).unwrap().contains("median_income"));
    let out = boost(&["predict", "-m", m, t, "--interactions"]);
    let header = text(&out.stdout).lines().next().unwrap().to_string();
    assert!(header.starts_with("latitude*latitude,latitude*housing_median_age,"), "{header}");
    assert!(header.ends_with("bias*bias"), "{header}");
    let out = boost(&["predict", "-m", m, t, "--approx-contribs"]);
    assert!(!out.status.success() && text(&out.stderr).contains("--approx-contribs"), "{}", text(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--missing -999` reads -999 as a missing value: the model of a file with -999 where another has
/// empty fields is that file's, byte for byte (and without it, -999 is a number: another model).
#[test]
fn a_missing_value_reads_as_an_empty_field() {
    let dir = scratch("missing-value");
    let (sentinel, empty) = (dir.join("sentinel.csv"), dir.join("empty.csv"));
    write_csv(&sentinel, 300, &["a", "b"], &[0, 1, 2], ",", true);
    let written = std::fs::read_to_string(&sentinel).unwrap();
    // Every seventh row's feature `a` missing, spelled -999 in one file and empty in the other.
    let lines: Vec<(String, String)> = written
        .lines()
        .enumerate()
        .map(|(i, line)| match line.split_once(',') {
            Some((label, rest)) if i > 0 && i % 7 == 0 => {
                let b = rest.split_once(',').unwrap().1;
                (format!("{label},-999,{b}"), format!("{label},,{b}"))
            }
            _ => (line.to_string(), line.to_string()),
        })
        .collect();
    let join = |side: fn(&(String, String)) -> &String| lines.iter().map(side).cloned().collect::<Vec<_>>().join("\n");
    std::fs::write(&sentinel, join(|l| &l.0) + "\n").unwrap();
    std::fs::write(&empty, join(|l| &l.1) + "\n").unwrap();
    let models: Vec<String> = [(&sentinel, true), (&empty, false), (&sentinel, false)]
        .iter()
        .enumerate()
        .map(|(k, (data, marked))| {
            let model = dir.join(format!("model{k}.json"));
            let mut args = vec![data.display().to_string(), "--rounds".into(), "3".into()];
            if *marked {
                args.extend(["--missing".to_string(), "-999".to_string()]);
            }
            let (_, out) = train_to(args, &model);
            assert!(out.status.success(), "{}", text(&out.stderr));
            std::fs::read_to_string(&model).unwrap()
        })
        .collect();
    assert_eq!(models[0], models[1], "-999 marked missing is an empty field");
    assert_ne!(models[0], models[2], "unmarked, -999 is a number");
}

/// `survival:aft` from two CSV columns of bounds (`inf` above right-censored rows): the test set's
/// `aft-nloglik` after 100 rounds is XGBoost 3.4.1's, 5.731171 (the accuracy test's case); the
/// upper bound column cannot be the label's.
#[test]
fn aft_trains_on_two_bound_columns() {
    let dir = scratch("aft");
    let model = dir.join("model.json");
    let train = data("veterans_lung_cancer/veterans_lung_cancer.train.csv");
    let test = data("veterans_lung_cancer/veterans_lung_cancer.test.csv");
    let bounds = ["--label", "Survival_label_lower_bound", "--label-upper-bound", "Survival_label_upper_bound"];
    let mut args: Vec<String> = [train.display().to_string(), format!("--eval=test={}", test.display())].into();
    args.extend(
        ["objective=survival:aft", "max_depth=6", "eta=0.3", "tree_method=hist", "device=cpu"].map(String::from),
    );
    args.extend(["--rounds", "100", "--verbose-eval", "100"].map(String::from));
    args.extend(bounds.map(String::from));
    let (_, out) = train_to(args.clone(), &model);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = text(&out.stdout) + &text(&out.stderr);
    assert!(log.contains("test-aft-nloglik:5.73117"), "{log}");
    let predictions = boost(&[
        "predict",
        "-m",
        &model.display().to_string(),
        &test.display().to_string(),
        bounds[0],
        bounds[1],
        bounds[2],
        bounds[3],
    ]);
    assert!(predictions.status.success(), "{}", text(&predictions.stderr));
    let times: Vec<f64> = text(&predictions.stdout).lines().map(|l| l.trim().parse().unwrap()).collect();
    assert!(times.len() == 27 && times.iter().all(|t| *t > 0.0), "survival times: {times:?}");
    *args.last_mut().unwrap() = "Survival_label_lower_bound".into();
    let (_, out) = train_to(args, &model);
    assert!(!out.status.success() && text(&out.stderr).contains("label_upper_bound"), "{}", text(&out.stderr));
}
