"""`bertkit predict` (bertkit/prediction.py): what it says about the input and model it is given."""



def test_an_empty_input_path_and_a_missing_model_say_so(cli, tmp_path):
    from helpers.checks import assert_refused

    code, _, err = cli("predict", "-m", tmp_path / "nope", "-i", "")
    assert_refused(code, err, "an empty path")
    source = tmp_path / "in.txt"
    source.write_text("a text\n")
    code, _, err = cli("predict", "-m", tmp_path / "nope", "-i", source)
    assert_refused(code, err, "not found. Give a directory written by `bertkit train`")
