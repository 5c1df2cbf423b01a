"""The shipped scenarios: found by name through importlib.resources; a file is named as a path."""

import pytest

import retrystorm.experiment.scenario
from retrystorm.experiment.scenario import ScenarioError, find_scenario, load_scenario, shipped_folder, shipped_names
from retrystorm.experiment.scenario.catalog import is_bare_name

SHIPPED = [
    "brooker-spike",
    "flapping",
    "jitter-shootout",
    "osdi22-retry",
    "real-clients",
    "smira-laptop",
    "smira-sigstop",
    "wyegelwel-burst",
]


def test_the_shipped_files_are_inside_the_package():
    assert shipped_names() == SHIPPED
    folder = shipped_folder()
    assert str(folder).startswith(str(retrystorm.experiment.scenario.__path__[0]))
    assert sorted(entry.name for entry in folder.iterdir()) == [f"{name}.yaml" for name in SHIPPED]


@pytest.mark.parametrize(
    ("text", "bare"),
    [
        ("smira-laptop", True),
        ("smira-laptop.yaml", False),
        ("smira-laptop.YML", False),
        ("./smira-laptop", False),
        ("scenarios/smira-laptop", False),
        ("", False),
    ],
)
def test_what_counts_as_a_name(text, bare):
    assert is_bare_name(text) is bare


def test_a_name_is_always_the_shipped_scenario_and_a_file_runs_only_as_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_scenario("smira-laptop").read_text() == (shipped_folder() / "smira-laptop.yaml").read_text()
    assert load_scenario("smira-laptop").name == "smira-laptop"
    mine = "name: mine\nmodel: fixed\nload: {users: 1, duration: 5s}\nstrategies: [none]\n"
    (tmp_path / "smira-laptop").write_text(mine)
    assert load_scenario("smira-laptop").name == "smira-laptop"  # a file in this folder never shadows it
    assert load_scenario("./smira-laptop").name == "mine"
    (tmp_path / "mine").write_text(mine)
    with pytest.raises(ScenarioError) as bare:
        load_scenario("mine")
    assert str(bare.value) == (
        "scenario 'mine': no shipped scenario of that name; to run the file 'mine' in this folder, "
        "name it as a path: ./mine"
    )
    assert load_scenario("./mine").name == "mine"


def test_an_unknown_name_lists_the_shipped_ones_and_the_closest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as unknown:
        load_scenario("smira-lapton")
    message = str(unknown.value)
    assert message.startswith("scenario 'smira-lapton': no such file, and no shipped scenario; ")
    assert "did you mean 'smira-laptop'? shipped scenarios: " + ", ".join(SHIPPED) in message
    with pytest.raises(ScenarioError, match=r"^scenario .zzz.: .*; shipped scenarios: brooker-spike, ") as far:
        load_scenario("zzz")
    assert "did you mean" not in str(far.value)


def test_a_missing_path_says_which_shipped_scenario_it_may_mean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as missing:
        load_scenario("scenarios/smira-laptop.yaml")
    assert str(missing.value) == (
        "scenarios/smira-laptop.yaml: cannot read the scenario: No such file or directory; did you mean the "
        "shipped scenario 'smira-laptop'? (a shipped scenario is named without a folder or .yaml)"
    )
