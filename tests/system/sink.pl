# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# Throughput sink: accept one TCP connection, read it to the end, and print
# "BYTES SECONDS" measured from the first byte received to the end of stream.
#   perl sink.pl ADDR PORT
use strict;
use warnings;
use IO::Socket::INET;
use Time::HiRes qw(time);

my ($addr, $port) = @ARGV;
die "usage: sink.pl ADDR PORT\n" unless $port;
my $s = IO::Socket::INET->new(LocalAddr => $addr, LocalPort => $port, Listen => 1,
                              ReuseAddr => 1)
    or die "sink: listen $addr:$port: $!\n";
local $SIG{ALRM} = sub { die "sink: timeout\n" };
alarm 60;
my $c = $s->accept or die "sink: accept: $!\n";
my ($n, $t0, $buf) = (0, undef, '');
while (my $r = sysread($c, $buf, 65536)) {
    $t0 //= time;
    $n += $r;
}
printf "%d %.3f\n", $n, defined $t0 ? time - $t0 : 0;
