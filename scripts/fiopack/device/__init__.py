"""fio-pack device: block devices with the service times of a model, built
in user space (a loop device over a file that tools/moddev serves through
FUSE). cli.py is the command, lifecycle.py brings a device up and down,
state.py is what is known of each device."""
