"""The volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) and what they
share: a pod's claims and volumes read the same way (``volume_common``), in-tree to CSI migration
(``volume_migration``), dynamic provisioning (``volume_provisioning``) and their CP-SAT terms
(``volume_encoding``)."""
