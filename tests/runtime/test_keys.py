"""CURVE key files: secrets created mode 0600 and never overwritten by accident, pairs
reused or completed, public keys authorised into a clients directory."""
import os
import stat

import pytest
import zmq
import zmq.auth

from ffcode.runtime.shared import keys


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask():
    """umask 0: whatever a file is created with is what it gets."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def test_generate_writes_a_working_pair(tmp_path, open_umask):
    """NAME.key and NAME.key_secret in pyzmq's format, the secret mode 0600 even under
    umask 0, the public one 0644; the directory is made mode 0700."""
    directory = tmp_path / "new"
    public_file, secret_file = keys.generate(str(directory), "master")
    assert (public_file, secret_file) == (str(directory / "master.key"),
                                          str(directory / "master.key_secret"))
    assert mode(secret_file) == 0o600 and mode(public_file) == 0o644
    assert mode(directory) == 0o700
    public, secret = zmq.auth.load_certificate(secret_file)
    assert zmq.auth.load_certificate(public_file) == (public, None)
    assert zmq.curve_public(secret) == public


def test_secret_is_created_private(tmp_path, monkeypatch):
    """The secret file is created by os.open with O_EXCL and mode 0600: it is never readable
    by others, not even between creating and a chmod."""
    created = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *args, **kwargs):
        created.append((os.path.basename(path), flags, mode))
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    monkeypatch.setattr(os, "chmod", None)          # no chmod afterwards
    keys.generate(str(tmp_path), "w")
    secret = [c for c in created if c[0] == "w.key_secret"]
    assert len(secret) == 1
    assert secret[0][1] & os.O_EXCL and secret[0][1] & os.O_CREAT and secret[0][2] == 0o600


@pytest.mark.parametrize("existing", ["w.key", "w.key_secret"])
def test_generate_refuses_to_overwrite(tmp_path, existing):
    """An existing file of the pair is a FileExistsError naming it, and neither file is
    touched; force=True replaces both with a new pair."""
    (tmp_path / existing).write_text("mine\n")
    with pytest.raises(FileExistsError) as e:
        keys.generate(str(tmp_path), "w")
    assert e.value.filename == str(tmp_path / existing)
    assert sorted(os.listdir(tmp_path)) == [existing]
    assert (tmp_path / existing).read_text() == "mine\n"
    public_file, secret_file = keys.generate(str(tmp_path), "w", force=True)
    assert zmq.auth.load_certificate(secret_file)[1] is not None
    assert mode(secret_file) == 0o600


def test_generate_refuses_a_link(tmp_path):
    """A symbolic link in the secret's place (even a dangling one) is not followed."""
    target = tmp_path / "elsewhere"
    os.symlink(target, tmp_path / "w.key_secret")
    with pytest.raises(FileExistsError):
        keys.generate(str(tmp_path), "w")
    assert not target.exists()


def test_pair_reuses_or_generates(tmp_path):
    first = keys.pair(str(tmp_path), "worker")
    assert first[2] is True
    again = keys.pair(str(tmp_path), "worker")
    assert again == first[:2] + (False,)
    os.remove(first[0])
    with pytest.raises(ValueError, match="incomplete: .*worker.key' is missing"):
        keys.pair(str(tmp_path), "worker")


def test_authorise(tmp_path):
    """The worker's public key is copied into clients/ once; another key under the same name
    is refused."""
    public_file, _ = keys.generate(str(tmp_path / "a"), "worker")
    clients = str(tmp_path / "clients")
    copy = keys.authorise(public_file, clients)
    assert copy == os.path.join(clients, "worker.key")
    assert zmq.auth.load_certificates(clients) == {
        zmq.auth.load_certificate(public_file)[0]: True}
    assert keys.authorise(public_file, clients) == copy
    other, _ = keys.generate(str(tmp_path / "b"), "worker")
    with pytest.raises(ValueError, match="another public key"):
        keys.authorise(other, clients)


def test_load_errors(tmp_path):
    (tmp_path / "junk.key").write_text("not a key\n")
    with pytest.raises(ValueError, match="not a CURVE key file"):
        keys.authorise(str(tmp_path / "junk.key"), str(tmp_path / "clients"))
    with pytest.raises(ValueError, match="does not exist"):
        keys.authorise(str(tmp_path / "missing.key"), str(tmp_path / "clients"))


def test_secret_readable_by_others_is_refused(tmp_path):
    """A secret key file that others may read is refused (as ssh does), naming the file
    and its mode; made private again, it loads."""
    _, secret = keys.generate(str(tmp_path), "master")
    for mode in (0o644, 0o640, 0o604):
        os.chmod(secret, mode)
        with pytest.raises(ValueError, match=f"may be read by others \\(mode {mode:o}\\)"):
            keys.load_secret(secret)
    os.chmod(secret, 0o600)
    assert keys.load_secret(secret)[1] is not None


@pytest.mark.parametrize("bad", ["junk", "directory", "dangling link"])
def test_one_bad_client_key_is_named(tmp_path, bad):
    """Every NAME.key of the clients directory is loaded; one that cannot be read or holds
    no key is an error naming it (pyzmq's loader gave up on all keys at once, and the
    master admitted nobody, saying only that no worker connected)."""
    clients = tmp_path / "clients"
    good, _ = keys.generate(str(tmp_path / "w"), "worker")
    keys.authorise(good, str(clients))
    path = clients / "zz.key"
    if bad == "junk":
        path.write_text("not a key\n")
    elif bad == "directory":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "missing")
    with pytest.raises(ValueError, match="zz.key"):
        keys.load_clients(str(clients))
    path.unlink() if bad != "directory" else path.rmdir()
    assert keys.load_clients(str(clients)) == {keys.load_secret(
        str(tmp_path / "w" / "worker.key_secret"))[0].decode()}


def test_cluster_names_a_bad_client_key(tmp_path):
    """The master refuses to start on a clients directory with a bad key file, naming it,
    instead of admitting nobody."""
    from ffcode.runtime import Cluster

    _, secret = keys.generate(str(tmp_path / "m"), "master")
    (tmp_path / "clients").mkdir()
    (tmp_path / "clients" / "bad.key").write_text("no key here\n")
    with pytest.raises(ValueError, match="bad.key"):
        Cluster(1, "tcp://127.0.0.1:*", key=secret, clients=str(tmp_path / "clients"))
